import type { WasmArena } from "../wasm-arena.js";

/**
 * An FP8 weight's block scales times 2^120, copied once into the arena for matmul/fp8-rows.wat's
 * fp8, which then splats each straight from memory (one vbroadcastss a row and half block) instead
 * of also multiplying it by 2^120 there. Only where every scale times 2^120 is finite (below 2^8):
 * then each is exact (a power-of-two multiple, normal) and the kernel's one multiply per weight
 * is the one rounding of the table decoding. The weight's own scales stay, for the decode into
 * scratch and the unpacked path; this copy is as large again (a scale per 32 codes: an eighth of
 * the codes' bytes; per 128x128 tile: next to nothing).
 */

/** Each weight's copy by its scales' array, per arena: made once however many pools read it. */
const folded = new WeakMap<WasmArena, WeakMap<Float32Array, number>>();

/** Whether every scale times 2^120 is a finite f32, as the fp8 kernel needs. */
export function fp8ScalesFold(scales: Float32Array): boolean {
  return scales.every((s) => Number.isFinite(Math.fround(s * 2 ** 120)));
}

/** The copy of `scales` times 2^120 in the arena: its byte offset, or -1 where one does not fold or there is no room. */
export function fp8FoldedScalesAt(scales: Float32Array, arena: WasmArena): number {
  const known = folded.get(arena) ?? new WeakMap<Float32Array, number>();
  folded.set(arena, known);
  let at = known.get(scales);
  if (at === undefined) {
    const out = fp8ScalesFold(scales) ? arena.array(Float32Array, scales.length) : null;
    if (out !== null) for (let i = 0; i < scales.length; i++) out[i] = (scales[i] as number) * 2 ** 120;
    at = out === null ? -1 : out.byteOffset;
    known.set(scales, at);
  }
  return at;
}
