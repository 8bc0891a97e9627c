import { instantiateWasm } from "../../../common/wasm-runtime.js";
import { kernelSwitches } from "../switches.js";
import { type WasmArena, wasmArena } from "../wasm-arena.js";
import { compileKernel } from "../wasm-kernels.js";

/** vector.wat's exports (byte offsets into the shared memory; see there). */
export interface VectorSimd {
  add_f32: (dst: number, src: number, count: number) => void;
  add_weighted: (sums: number, w: number, y: number, count: number) => void;
  add_sums: (out: number, sums: number, count: number) => void;
  rms_norm: (x: number, out: number, w: number, rows: number, dim: number, eps: number) => void;
}

/**
 * The process's arena and its vector.wat instance (this thread's), or null without SIMD (or with
 * BRINGUP_ENGINE_SIMD=0, where the pool keeps step buffers out of the arena and the kernels need
 * not be built).
 */
let kernels: { readonly arena: WasmArena; readonly simd: VectorSimd } | null | undefined;

export function vectorKernels(): { readonly arena: WasmArena; readonly simd: VectorSimd } | null {
  if (kernels !== undefined) return kernels;
  const arena = kernelSwitches().simd ? wasmArena() : null;
  const module = arena === null ? undefined : compileKernel("vector/vector");
  kernels =
    arena === null || module === undefined
      ? null
      : { arena, simd: instantiateWasm(module, arena.memory) as VectorSimd };
  return kernels;
}

/**
 * dst[i] += src[i] for each i of dst, in f32: vector.wat's add_f32 where both lie in the kernels'
 * shared memory (a replayed step's buffers, loaded weights), else a plain loop; the same bits.
 */
export function addInto(dst: Float32Array, src: Float32Array): void {
  const k = vectorKernels();
  const [d, s] = k === null ? [-1, -1] : [k.arena.offsetOf(dst), k.arena.offsetOf(src)];
  if (k !== null && d >= 0 && s >= 0) k.simd.add_f32(d, s, dst.length);
  else addIntoPlain(dst, src);
}

/** addInto's plain loop (its reference). */
export function addIntoPlain(dst: Float32Array, src: Float32Array): void {
  for (let i = 0; i < dst.length; i++) dst[i] = (dst[i] as number) + (src[i] as number);
}

/**
 * A sum of weighted f32 rows of `length` in f64, then added once into an f32 row: the same
 * additions in the same order whichever way it runs (vector.wat where the rows lie in the kernels'
 * shared memory, where the sums then lie too, else plain loops), so the same bits.
 */
export class WeightedSum {
  readonly sums: Float64Array;
  /** vector.wat over the sums at byte `offset`, or null: plain loops. */
  private readonly kernels: { readonly arena: WasmArena; readonly simd: VectorSimd } | null;
  private readonly offset: number;

  constructor(readonly length: number) {
    const k = vectorKernels();
    this.offset = k === null ? -1 : k.arena.allocate(8 * length);
    this.kernels = this.offset < 0 ? null : k;
    this.sums =
      this.kernels === null
        ? new Float64Array(length)
        : new Float64Array(this.kernels.arena.memory.buffer, this.offset, length);
  }

  clear(): void {
    this.sums.fill(0);
  }

  /** sums[i] += w · y[at + i]. */
  add(w: number, y: Float32Array, at = 0): void {
    const row = this.kernels === null ? -1 : this.kernels.arena.offsetOf(y);
    if (row >= 0) this.kernels?.simd.add_weighted(this.offset, w, row + 4 * at, this.length);
    else {
      const sums = this.sums;
      for (let i = 0; i < sums.length; i++) sums[i] = (sums[i] as number) + w * (y[at + i] as number);
    }
  }

  /** out[at + i] += sums[i], each sum rounded to f32 once. */
  addTo(out: Float32Array, at = 0): void {
    const row = this.kernels === null ? -1 : this.kernels.arena.offsetOf(out);
    if (row >= 0) this.kernels?.simd.add_sums(row + 4 * at, this.offset, this.length);
    else {
      const sums = this.sums;
      for (let i = 0; i < sums.length; i++) out[at + i] = (out[at + i] as number) + (sums[i] as number);
    }
  }
}
