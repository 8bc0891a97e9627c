import { BringupError } from "../../common/errors.js";
import type { PlannedState } from "./capacity.js";
import type { BlockPlacement } from "./placement.js";
import { floatsPerSequence } from "./state-spec.js";

/** A float32 array in shared memory, so the pool's worker threads can read it in place. */
function sharedFloats(length: number): Float32Array {
  return new Float32Array(new SharedArrayBuffer(length * 4));
}

/**
 * The paged keys and values of one attention layer: `numBlocks` blocks of `blockSize` slots, each
 * slot holding numKvHeads keys of headDim and values of vHeadDim. A slot number is
 * block * blockSize + offset; `group` says which of a sequence's block tables holds its positions.
 */
export class PagedKv {
  readonly kind = "paged-kv";
  readonly keys: Float32Array;
  readonly values: Float32Array;
  readonly keyStride: number;
  readonly valueStride: number;

  constructor(
    readonly placement: BlockPlacement,
    readonly group: number,
    numBlocks: number,
    readonly numKvHeads: number,
    readonly headDim: number,
    readonly vHeadDim: number,
  ) {
    this.keyStride = numKvHeads * headDim;
    this.valueStride = numKvHeads * vHeadDim;
    this.keys = sharedFloats(numBlocks * placement.blockSize * this.keyStride);
    this.values = sharedFloats(numBlocks * placement.blockSize * this.valueStride);
  }

  write(slot: number, k: Float32Array, kOffset: number, v: Float32Array, vOffset: number): void {
    this.keys.set(k.subarray(kOffset, kOffset + this.keyStride), slot * this.keyStride);
    this.values.set(v.subarray(vOffset, vOffset + this.valueStride), slot * this.valueStride);
  }

  copyBlock(from: number, to: number): void {
    copyRun(this.keys, this.placement.blockSize * this.keyStride, from, to);
    copyRun(this.values, this.placement.blockSize * this.valueStride, from, to);
  }
}

/** One row of `width` floats per token in paged blocks (MLA's latent, DSA's indexer keys), or per compressed run of tokens. */
export class PagedRows {
  readonly kind = "paged-rows";
  readonly rows: Float32Array;

  constructor(
    readonly placement: BlockPlacement,
    readonly group: number,
    numBlocks: number,
    readonly width: number,
  ) {
    this.rows = sharedFloats(numBlocks * placement.blockSize * width);
  }

  write(slot: number, src: Float32Array, offset: number): void {
    this.rows.set(src.subarray(offset, offset + this.width), slot * this.width);
  }

  copyBlock(from: number, to: number): void {
    copyRun(this.rows, this.placement.blockSize * this.width, from, to);
  }
}

/** One state of `floats` values per sequence slot (a recurrent matrix, a convolution tail). */
export class SequenceSlots {
  readonly kind = "slots";
  readonly data: Float32Array;

  constructor(
    readonly numSlots: number,
    readonly floats: number,
  ) {
    this.data = new Float32Array(numSlots * floats);
  }

  /** Slot `slot`'s state, a view the layer updates in place. */
  view(slot: number): Float32Array {
    return this.data.subarray(slot * this.floats, (slot + 1) * this.floats);
  }

  copySlot(from: number, to: number): void {
    copyRun(this.data, this.floats, from, to);
  }
}

function copyRun(data: Float32Array, size: number, from: number, to: number): void {
  data.copyWithin(to * size, from * size, (from + 1) * size);
}

/** Storage of one state: paged keys and values, paged rows, or per-sequence slots. */
export type StateStorage = PagedKv | PagedRows | SequenceSlots;

/**
 * What the engine gives one layer for the states it asked for, under the names it asked with.
 * Each getter returns the kind the layer's spec implies, or throws STATE_STORAGE_MISMATCH: a
 * mixer that reads a state it did not declare (a bug in its `states`).
 */
export class LayerStorage {
  static readonly NONE = new LayerStorage(new Map());

  constructor(private readonly stores: ReadonlyMap<string, StateStorage>) {}

  kv(name: string): PagedKv {
    const s = this.stores.get(name);
    if (s instanceof PagedKv) return s;
    return this.mismatch(name, "paged keys and values");
  }

  rows(name: string): PagedRows {
    const s = this.stores.get(name);
    if (s instanceof PagedRows) return s;
    return this.mismatch(name, "paged rows");
  }

  slots(name: string): SequenceSlots {
    const s = this.stores.get(name);
    if (s instanceof SequenceSlots) return s;
    return this.mismatch(name, "per-sequence slots");
  }

  /** Every store, for copying a sequence's state to another (fork). */
  all(): IterableIterator<StateStorage> {
    return this.stores.values();
  }

  private mismatch(name: string, wanted: string): never {
    const has = this.stores.get(name);
    throw new BringupError(
      "STATE_STORAGE_MISMATCH",
      `a layer read its state "${name}" as ${wanted} but declared ${has === undefined ? "no such state" : `it as ${has.kind}`}; make the mixer's states() name what its forward reads.`,
      { subject: name },
    );
  }
}

/**
 * The storage of one layer's planned states, each pool holding `units[pool]` blocks or slots:
 * paged keys and values for attention, paged rows for a latent or indexer keys, slots for a
 * per-sequence state.
 */
export function layerStorage(planned: readonly PlannedState[], units: readonly number[]): LayerStorage {
  if (planned.length === 0) return LayerStorage.NONE;
  return new LayerStorage(new Map(planned.map((p) => [p.name, storeFor(p, units[p.pool] as number)])));
}

function storeFor(p: PlannedState, n: number): StateStorage {
  if (p.placement === undefined) return new SequenceSlots(n, floatsPerSequence(p.spec));
  const { spec, placement, pool } = p;
  switch (spec.kind) {
    case "full":
    case "sliding-window":
    case "sliding-mask":
      return new PagedKv(placement, pool, n, spec.numKvHeads, spec.headDim, spec.vHeadDim);
    case "latent":
      return new PagedRows(placement, pool, n, spec.latentDim + spec.ropeDim);
    case "indexer-keys":
      return new PagedRows(placement, pool, n, spec.headDim);
    case "compressed":
      return new PagedRows(placement, pool, n, spec.width);
  }
}
