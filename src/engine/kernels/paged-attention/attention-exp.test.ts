import { describe, expect, it } from "vitest";
import { Rng } from "../../tensor/random.js";
import { softmax } from "../softmax.js";
import { wasmArena } from "../wasm-arena.js";
import { compileAttentionSimd, instantiateAttentionSimd } from "./attention-simd-module.js";

// attention.wat's exp is fdlibm's, ported lane for lane, so it must return Math.exp's bits; its
// softmax2, which takes the exps two positions a step, must give softmax.ts's.
const arena = wasmArena();
const module = compileAttentionSimd();

/** exp of every value through attention.wat's `exps`, and the arguments whose bits differ from Math.exp's. */
function mismatches(xs: Float64Array): number[] {
  if (arena === null || module === undefined) throw new Error("WebAssembly SIMD unavailable");
  const simd = instantiateAttentionSimd(module, arena.memory);
  const n = xs.length + (xs.length % 2);
  const src = arena.allocate(8 * n);
  const dst = arena.allocate(8 * n);
  new Float64Array(arena.memory.buffer, src, n).set(xs);
  simd.exps(src, dst, n);
  const got = new Float64Array(arena.memory.buffer, dst, xs.length);
  return Array.from(xs).filter((x, i) => !Object.is(got[i], Math.exp(x)));
}

/** The doubles next to x: one and two units in the last place either side. */
function around(x: number): number[] {
  const bits = new BigInt64Array(new Float64Array([x]).buffer);
  const v = bits[0] as bigint;
  return [-2n, -1n, 0n, 1n, 2n].map((d) => new Float64Array(new BigInt64Array([v + d]).buffer)[0] as number);
}

describe("attention.wat's exp", () => {
  it("returns Math.exp's bits over random arguments: softmax's range, the whole finite range, near zero", () => {
    const rng = new Rng(11);
    const draw = (n: number, f: () => number) => Float64Array.from({ length: n }, f);
    const xs = [
      draw(400_000, () => -60 * rng.next()),
      draw(200_000, () => 1500 * (rng.next() - 0.5)),
      draw(200_000, () => 4 * (rng.next() - 0.5)),
      draw(100_000, () => 1e-7 * (rng.next() - 0.5)),
      // Scores of a softmax: f32 dot products scaled, less their max.
      draw(100_000, () => Math.fround(rng.normal() * 8) - Math.fround(20 * rng.next())),
    ];
    for (const x of xs) expect(mismatches(x)).toEqual([]);
  });

  it("returns Math.exp's bits at every branch's edge and for special values", () => {
    const edges = [
      0.5 * Math.LN2, // k = 0 up to here
      1.5 * Math.LN2, // k = ±1 up to here
      2 ** -28, // 1 + x below here
      709.782712893384, // overflow above
      -745.1332191019411, // underflow below
      -708.3964185322641, // subnormal results below (k < -1021)
      709.0895657128241, // k = 1023 / 1024
      Math.LN2 * 1024,
      1,
      0.5,
    ];
    const xs = edges.flatMap((e) => [...around(e), ...around(-e)]);
    xs.push(0, -0, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN, Number.MIN_VALUE);
    xs.push(-Number.MIN_VALUE, Number.MAX_VALUE, -Number.MAX_VALUE, 2 ** -1022, -(2 ** -1022));
    for (let k = -1080; k <= 1030; k++) xs.push(...around(k * Math.LN2), ...around((k + 0.5) * Math.LN2));
    expect(mismatches(Float64Array.from(xs))).toEqual([]);
  });
});

describe("attention.wat's softmax2", () => {
  it("gives softmax's bits: two rows or one, odd and even lengths, with and without a sink", () => {
    if (arena === null || module === undefined) throw new Error("WebAssembly SIMD unavailable");
    const simd = instantiateAttentionSimd(module, arena.memory);
    const rng = new Rng(13);
    const [s0, s1] = [arena.allocate(8 * 40), arena.allocate(8 * 40)];
    const row = (n: number) => Float64Array.from({ length: n }, () => Math.fround(rng.normal() * 8));
    for (let n = 1; n <= 40; n++)
      for (const sinks of [false, true])
        for (const rows of [1, 2]) {
          const [a, b, sink0, sink1] = [row(n), row(n), rng.normal(), rng.normal()];
          new Float64Array(arena.memory.buffer, s0, n).set(a);
          new Float64Array(arena.memory.buffer, s1, n).set(b);
          simd.softmax2(s0, rows === 2 ? s1 : s0, n, sinks ? 1 : 0, sink0, rows === 2 ? sink1 : sink0);
          softmax(a, 0, n, sinks ? sink0 : undefined);
          softmax(b, 0, n, sinks ? sink1 : undefined);
          expect(Array.from(new Float64Array(arena.memory.buffer, s0, n))).toEqual(Array.from(a));
          if (rows === 2)
            expect(Array.from(new Float64Array(arena.memory.buffer, s1, n))).toEqual(Array.from(b));
        }
  });
});
