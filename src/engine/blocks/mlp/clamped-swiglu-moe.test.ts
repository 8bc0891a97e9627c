import { afterAll, describe, expect, it, vi } from "vitest";
import { dequantizeMxfp4, encodeMxfp4 } from "../../../formats/index.js";
import { Int8Experts } from "../../kernels/matmul/int8-experts.js";
import { MatmulPool } from "../../kernels/pool.js";
import { clampedSwiglu } from "../../kernels/swiglu/clamped-swiglu.js";
import type { HostTensor } from "../../loader/host-tensor.js";
import { WeightSource } from "../../loader/weight-source.js";
import type { ForwardContext } from "../../model/model.js";
import { Rng } from "../../tensor/random.js";
import { ClampedSwigluMoe } from "./clamped-swiglu-moe.js";
import { routeTopKThenSoftmax } from "./routing.js";

const pool = new MatmulPool(1, { simd: false });
afterAll(() => pool.close());

describe("gpt-oss's clamped SwiGLU", () => {
  it("clamps the gate above and the linear half both ways, reading them from interleaved columns", () => {
    // Two tokens, I = 3: pairs (gate, linear).
    const gateUp = Float32Array.from([9, -9, -2, 0.5, 1, 20, 7, 7, -30, -1, 0, -8]);
    const got = clampedSwiglu(gateUp, 2, 3, 7, 1.702);
    const expected = [
      [9, -9],
      [-2, 0.5],
      [1, 20],
      [7, 7],
      [-30, -1],
      [0, -8],
    ].map(([g, l]) => {
      const glu = Math.min(g as number, 7);
      const lin = Math.max(Math.min(l as number, 7), -7);
      return Math.fround((glu / (1 + Math.exp(-1.702 * glu))) * (lin + 1));
    });
    expect(Array.from(got)).toEqual(expected);
  });

  it("routes to the top-k logits and weighs them by a softmax over those k", () => {
    const r = routeTopKThenSoftmax(Float32Array.from([0.1, 2, -1, 2, 0.5]), 0, 5, 2);
    expect(Array.from(r.experts)).toEqual([1, 3]);
    expect(Array.from(r.weights)).toEqual([0.5, 0.5]);
    const s = routeTopKThenSoftmax(Float32Array.from([0, 1, 3]), 0, 3, 2);
    expect(s.weights[0]).toBeCloseTo(1 / (1 + Math.exp(-2)), 15);
  });
});

describe("ClampedSwigluMoe", () => {
  const E = 3;
  const H = 32;
  const I = 32;
  const rng = new Rng(5);
  const normal = (n: number, std: number) => rng.fillNormal(new Float32Array(n), std);
  const gateUp = encodeMxfp4(normal(E * 2 * I * H, 0.5));
  const down = encodeMxfp4(normal(E * H * I, 0.5));
  const common = new Map<string, HostTensor>([
    ["m.router.weight", { dtype: "F32", shape: [E, H], data: normal(E * H, 0.3) }],
    ["m.router.bias", { dtype: "F32", shape: [E], data: normal(E, 0.3) }],
    ["m.experts.gate_up_proj_bias", { dtype: "F32", shape: [E, 2 * I], data: normal(E * 2 * I, 0.5) }],
    ["m.experts.down_proj_bias", { dtype: "F32", shape: [E, H], data: normal(E * H, 0.5) }],
  ]);
  const mxfp4 = new Map<string, HostTensor>([
    ...common,
    ["m.experts.gate_up_proj_blocks", { dtype: "U8", shape: [E, 2 * I, H / 32, 16], data: gateUp.blocks }],
    ["m.experts.gate_up_proj_scales", { dtype: "U8", shape: [E, 2 * I, H / 32], data: gateUp.scales }],
    ["m.experts.down_proj_blocks", { dtype: "U8", shape: [E, H, I / 32, 16], data: down.blocks }],
    ["m.experts.down_proj_scales", { dtype: "U8", shape: [E, H, I / 32], data: down.scales }],
  ]);
  const f32 = new Map<string, HostTensor>([
    ...common,
    [
      "m.experts.gate_up_proj",
      { dtype: "F32", shape: [E, 2 * I, H], data: dequantizeMxfp4(gateUp.blocks, gateUp.scales) },
    ],
    [
      "m.experts.down_proj",
      { dtype: "F32", shape: [E, H, I], data: dequantizeMxfp4(down.blocks, down.scales) },
    ],
  ]);
  const spec = { numExperts: E, topK: 2, intermediateSize: I, limit: 7, alpha: 1.702 };
  const load = (tensors: Map<string, HostTensor>) =>
    ClampedSwigluMoe.load(new WeightSource((n) => tensors.get(n), [...tensors.keys()], "test"), "m", spec, H);
  const T = 5;
  const h = normal(T * H, 1);
  const ctx = { pool } as unknown as ForwardContext;

  it("gives the same bits from MXFP4 experts as from their dequantized f32 values", () => {
    expect(Array.from(load(mxfp4).forward(h, ctx))).toEqual(Array.from(load(f32).forward(h, ctx)));
  });

  it("at one token on the integer MXFP4 path, gives on one thread (Int8Experts) the pool's bits", () => {
    const int8 = [1, 2].map((t) => new MatmulPool(t, { mxfp4: "int8" }));
    const moe = load(mxfp4);
    const forward = (p: MatmulPool, t: number) =>
      Array.from(moe.forward(h.subarray(t * H, (t + 1) * H), { pool: p } as unknown as ForwardContext));
    const run = vi.spyOn(Int8Experts.prototype, "run");
    for (let t = 0; t < T; t++)
      expect(forward(int8[0] as MatmulPool, t)).toEqual(forward(int8[1] as MatmulPool, t));
    // Every token's experts went through Int8Experts on the one-thread pool, and only there.
    expect(run.mock.results.map((r) => r.value !== null)).toEqual(Array(T).fill(true));
    run.mockRestore();
    return Promise.all(int8.map((p) => p.close()));
  });

  it("equals a token-by-token reference of the routing, experts and mix", () => {
    const got = load(f32).forward(h, ctx);
    const W = (name: string) => f32.get(name)?.data as Float32Array;
    for (let t = 0; t < T; t++) {
      const x = h.subarray(t * H, (t + 1) * H);
      const logits = Float32Array.from({ length: E }, (_, e) => {
        let s = 0;
        for (let j = 0; j < H; j++) s += (W("m.router.weight")[e * H + j] as number) * (x[j] as number);
        return Math.fround(Math.fround(s) + (W("m.router.bias")[e] as number));
      });
      const { experts, weights } = routeTopKThenSoftmax(logits, 0, E, 2);
      for (let i = 0; i < H; i++) {
        let mixed = 0;
        experts.forEach((e, r) => {
          const gu = Float32Array.from({ length: 2 * I }, (_, o) => {
            let s = 0;
            for (let j = 0; j < H; j++)
              s += (W("m.experts.gate_up_proj")[(e * 2 * I + o) * H + j] as number) * (x[j] as number);
            return Math.fround(Math.fround(s) + (W("m.experts.gate_up_proj_bias")[e * 2 * I + o] as number));
          });
          const act = clampedSwiglu(gu, 1, I, 7, 1.702);
          let y = 0;
          for (let j = 0; j < I; j++)
            y += (W("m.experts.down_proj")[(e * H + i) * I + j] as number) * (act[j] as number);
          mixed +=
            (weights[r] as number) * (Math.fround(y) + (W("m.experts.down_proj_bias")[e * H + i] as number));
        });
        expect(got[t * H + i]).toBeCloseTo(mixed, 4);
      }
    }
  });
});
