/**
 * The MoE bench's FP8 experts for bench/kernel-before-after.ts: its MXFP4 experts' values as E4M3
 * codes with their scales as f32 (as `bringup weights convert` writes them, 1x32 blocks), 16 of 64
 * [2048, 1024] at random (kernel-arena.ts's randomExperts), the codes in lanes order
 * (formats/fp8-lanes.ts) and in quads order (formats/fp8-quads.ts, as the loader lays them), the
 * scales as they are and times 2^120 (fp8-folded-scales.ts), and an input row.
 */
import { toLanesInPlace } from "../src/formats/fp8-lanes.js";
import { toQuadsInPlace } from "../src/formats/fp8-quads.js";
import { E2M1_TO_E4M3 } from "../src/formats/mxfp4-to-fp8.js";
import { type Arm, allocate, memory, randomExperts, rng } from "./kernel-arena.js";

export function fp8Experts() {
  const experts = randomExperts();
  const count = experts.codesBytes * 2;
  const [lanes, quads] = [allocate(count), allocate(count)];
  const packed = new Uint8Array(memory.buffer, experts.codes, experts.codesBytes);
  const codes = new Uint8Array(memory.buffer, lanes, count);
  packed.forEach((b, i) => {
    codes[2 * i] = E2M1_TO_E4M3[b & 15] as number;
    codes[2 * i + 1] = E2M1_TO_E4M3[b >> 4] as number;
  });
  new Uint8Array(memory.buffer, quads, count).set(codes);
  toQuadsInPlace(new Uint8Array(memory.buffer, quads, count), 1024);
  toLanesInPlace(codes);
  const exponents = new Uint8Array(memory.buffer, experts.scales, count / 32);
  const [scales, folded] = [allocate(count / 8), allocate(count / 8)];
  new Float32Array(memory.buffer, scales, count / 32).set(Array.from(exponents, (e) => 2 ** (e - 127)));
  new Float32Array(memory.buffer, folded, count / 32).set(Array.from(exponents, (e) => 2 ** (e - 7)));
  const x = allocate(1024 * 4);
  rng.fillNormal(new Float32Array(memory.buffer, x, 1024), 1);
  const acc = allocate(128);
  /** 1x32 scales: a scale row of 128 bytes, one block of 32 a scale, one row a band, from its start. */
  const scaleLayout = [128, 1, 1, 0] as const;
  /**
   * Each chunk of `chunk` rows of the picked experts: its codes from `base` (lanes or quads), its
   * scales from `scaleBase` (scales or folded), its output and its rows.
   */
  const eachChunk = (
    chunk: number,
    base: number,
    scaleBase: number,
    call: (codes: number, scales: number, o: number, n: number) => void,
  ) =>
    experts.each(chunk, (at, scalesAt, o, n) =>
      call(base + (at - experts.codes) * 2, scaleBase + (scalesAt - experts.scales) * 4, o, n),
    );
  /** `kernel`'s fp8 over the picked experts at the input row, `chunk` rows a call. */
  const rows = (kernel: Arm, base: number, scaleBase: number, chunk: number) =>
    eachChunk(chunk, base, scaleBase, (codes, s, o, n) =>
      kernel.fp8?.(1024, 1, x, codes, s, ...scaleLayout, acc, o, n, experts.rows * 4),
    );
  /** `kernel`'s decode of the picked experts' codes in quads order into `out`, `chunk` rows a call. */
  const decodeQuads = (kernel: Arm, out: number, chunk: number) =>
    eachChunk(chunk, quads, scales, (codes, s, _o, n) =>
      kernel.decode?.(1024, codes, s, ...scaleLayout, out, n),
    );
  return { experts, lanes, quads, scales, folded, x, acc, rows, decodeQuads };
}
