import { BringupError } from "../../../common/errors.js";
import { instantiateWasm } from "../../../common/wasm-runtime.js";
import type { Weight } from "../../tensor/weight.js";
import { compileMxfp4Int8 } from "../narrow-modules.js";
import { clampedSwiglu } from "../swiglu/clamped-swiglu.js";
import { compileSwigluSimd, instantiateSwigluSimd, type SwigluSimd } from "../swiglu/swiglu-simd-module.js";
import { type WasmArena, wasmArena } from "../wasm-arena.js";
import { int8ExponentStride } from "./int8-exponents.js";
import { int8Reads, weightParts } from "./matmul-kernel.js";
import { type Int8Quantize, quantizedBytes, quantizedFormBytes } from "./mxfp4-int8.js";

/** One chosen expert of a gpt-oss MoE layer: its MXFP4 projections and their f32 biases. */
export interface ClampedExpert {
  readonly gateUp: Weight;
  readonly gateUpBias: Float32Array;
  readonly down: Weight;
  readonly downBias: Float32Array;
}

/** An MXFP4 weight as the integer path's list reads it: byte offsets of its codes and laid-out exponents. */
interface Int8Weight {
  readonly codes: number;
  readonly exponents: number;
  readonly halves: boolean;
}

/** mxfp4-int8.wat's exports this file calls. */
interface Int8Kernels {
  readonly mxfp4_int8_list: (list: number, count: number) => void;
  readonly quantize: Int8Quantize;
}

/** Byte offsets of the region's areas for one shape (Int8Experts.layout). */
interface Areas {
  readonly k: number;
  readonly H: number;
  readonly I: number;
  readonly hAt: number;
  readonly hq: number;
  readonly gu: number;
  readonly act: number;
  readonly aq: number;
  readonly y: number;
  readonly list: number;
}

/** i32s a list entry of mxfp4_int8_list holds: mxfp4_int8's nine arguments, then the bias. */
const ENTRY_INTS = 10;

/**
 * One token's chosen experts of a gpt-oss MoE layer on the integer MXFP4 path, on the calling
 * thread in a handful of WebAssembly calls instead of a few JavaScript calls and dispatches per
 * expert: the token quantized once, every gate_up projection (bias added in the kernel) in one
 * mxfp4_int8_list call, the clamped SwiGLU of all of them in one call, their activations quantized
 * in one call, every down projection (bias added) in one list call. Each output has the bits the
 * pool's matmul, addBias and clampedSwiglu in f32 (the integer path's arithmetic) give it (the
 * same kernels in the same order, one row at a time): int8-experts.test.ts and
 * clamped-swiglu-moe.test.ts hold them.
 */
export class Int8Experts {
  private readonly known = new WeakMap<Weight, Int8Weight | null>();
  private region = -1;
  private bytes = 0;
  /** The last shape's areas, and the view of its down outputs once made. */
  private areas: Areas | null = null;
  private out: Float32Array | null = null;
  /** The memory as f32 and as i32 (the list's entries), up to the region's end. */
  private views: { f32: Float32Array<ArrayBufferLike>; entries: Int32Array<ArrayBufferLike> } = {
    f32: new Float32Array(0),
    entries: new Int32Array(0),
  };

  constructor(
    private readonly arena: WasmArena,
    private readonly kernels: Int8Kernels,
    private readonly swiglu: SwigluSimd,
  ) {}

  /**
   * The down projections' outputs [experts.length, H] (a view of this object's region, valid
   * until its next run) of h [1, H], or null where a weight or bias is not on the integer path
   * (not MXFP4 in the shared memory with laid-out exponents, a bias outside it): the caller then
   * takes the pool's matmuls.
   */
  run(h: Float32Array, experts: readonly ClampedExpert[], limit: number, alpha: number): Float32Array | null {
    const k = experts.length;
    const first = experts[0];
    if (first === undefined) return null;
    const [H, twoI] = [first.gateUp.cols, first.gateUp.rows];
    const I = twoI / 2;
    const { hAt, hq, gu, act, aq, y, list } = this.layout(k, H, I);
    const hHalves = quantizedFormBytes(1, H);
    const aHalves = quantizedFormBytes(k, I);
    const aRow = quantizedFormBytes(1, I);
    for (let r = 0; r < k; r++) {
      const e = experts[r] as ClampedExpert;
      if (e.gateUp.cols !== H || e.gateUp.rows !== twoI || e.down.cols !== I || e.down.rows !== H)
        throw new BringupError(
          "ENGINE_SHAPE",
          `expert shapes disagree: [${twoI}, ${H}] then [${H}, ${I}] expected.`,
        );
      if (
        !this.entry(list, r, e.gateUp, e.gateUpBias, hq, hHalves, gu + 4 * r * twoI) ||
        !this.entry(list, k + r, e.down, e.downBias, aq + r * aRow, aHalves, y + 4 * r * H)
      )
        return null;
    }
    let x = this.arena.offsetOf(h);
    if (x < 0) {
      this.views.f32.set(h.subarray(0, H), hAt / 4);
      x = hAt;
    }
    this.kernels.quantize(x, 1, H, hq);
    this.kernels.mxfp4_int8_list(list, k);
    const count = k * I;
    if (count % 4 === 0 && limit > 0) this.swiglu.clamped_swiglu_f32(gu, act, count, limit, alpha);
    else {
      const { f32 } = this.views;
      clampedSwiglu(
        f32.subarray(gu / 4, gu / 4 + k * twoI),
        k,
        I,
        limit,
        alpha,
        f32.subarray(act / 4, act / 4 + count),
        "f32",
      );
    }
    this.kernels.quantize(act, k, I, aq);
    this.kernels.mxfp4_int8_list(list + k * ENTRY_INTS * 4, k);
    return this.outputs(y, k * H);
  }

  /**
   * Writes list entry i at byte `list`: weight w times one input row quantized at byte q in OCP
   * form and `halves` bytes later in halves form, plus `bias`, into o; false where the list cannot
   * take it.
   */
  private entry(
    list: number,
    i: number,
    w: Weight,
    bias: Float32Array,
    q: number,
    halves: number,
    o: number,
  ): boolean {
    const p = this.int8Weight(w);
    const b = this.arena.offsetOf(bias);
    if (p === null || b < 0 || bias.length !== w.rows) return false;
    const entries = this.views.entries;
    const at = list / 4 + ENTRY_INTS * i;
    entries[at] = w.cols;
    entries[at + 1] = 1;
    entries[at + 2] = q + (p.halves ? halves : 0);
    entries[at + 3] = p.codes;
    entries[at + 4] = p.exponents;
    entries[at + 5] = int8ExponentStride(w.rows);
    entries[at + 6] = o;
    entries[at + 7] = w.rows;
    entries[at + 8] = 4 * w.rows;
    entries[at + 9] = b;
    return true;
  }

  /**
   * The region's areas (byte offsets) for k experts of hidden size H and intermediate size I: h,
   * h quantized, gate_up outputs, activations, activations quantized, down outputs, the list (its
   * gate_up entries, then its down ones). Laid out once per shape, the region made anew (with its
   * views) where it is too short.
   */
  private layout(k: number, H: number, I: number): Areas {
    const last = this.areas;
    if (last !== null && last.k === k && last.H === H && last.I === I) return last;
    const sizes = [4 * H, quantizedBytes(1, H), 8 * k * I, 4 * k * I, quantizedBytes(k, I), 4 * k * H];
    const bytes = sizes.reduce((a, b) => a + b, 0) + 2 * k * ENTRY_INTS * 4;
    if (this.bytes < bytes) {
      const grown = Math.max(bytes, 2 * this.bytes);
      const region = this.arena.array(Uint8Array, grown);
      if (region === null) {
        throw new BringupError(
          "ENGINE_WASM_MEMORY_FULL",
          "no room left in the 4 GiB shared kernel memory for the integer MXFP4 experts' scratch; run with BRINGUP_ENGINE_MXFP4=fused.",
        );
      }
      // Views of the region's buffer, which the arena knows (offsetOf), whatever the memory does later.
      [this.region, this.bytes] = [region.byteOffset, grown];
      this.views = { f32: new Float32Array(region.buffer), entries: new Int32Array(region.buffer) };
    }
    const at = [this.region];
    for (const size of sizes) at.push((at.at(-1) as number) + size);
    const [hAt, hq, gu, act, aq, y, list] = at as [number, number, number, number, number, number, number];
    this.areas = { k, H, I, hAt, hq, gu, act, aq, y, list };
    this.out = null;
    return this.areas;
  }

  /** The down outputs' view (count f32s at byte y), made once per layout. */
  private outputs(y: number, count: number): Float32Array {
    this.out ??= this.views.f32.subarray(y / 4, y / 4 + count);
    return this.out;
  }

  /** The weight's codes and exponents for the list, or null where the integer path does not read it. */
  private int8Weight(w: Weight): Int8Weight | null {
    let known = this.known.get(w);
    if (known === undefined) {
      const parts = weightParts(w, this.arena, true);
      known =
        int8Reads(parts) && w.cols % 32 === 0
          ? { codes: parts.offset, exponents: parts.int8Exponents, halves: parts.halves }
          : null;
      this.known.set(w, known);
    }
    return known;
  }
}

let made: Int8Experts | null | undefined;

/**
 * The calling thread's Int8Experts over the process's arena (made on first use), or null where
 * WebAssembly SIMD is unavailable.
 */
export function int8Experts(): Int8Experts | null {
  if (made !== undefined) return made;
  const arena = wasmArena();
  const int8 = arena === null ? undefined : compileMxfp4Int8();
  const swiglu = compileSwigluSimd();
  made =
    arena === null || int8 === undefined || swiglu === undefined
      ? null
      : new Int8Experts(
          arena,
          instantiateWasm(int8, arena.memory) as Int8Kernels,
          instantiateSwigluSimd(swiglu, arena.memory),
        );
  return made;
}
