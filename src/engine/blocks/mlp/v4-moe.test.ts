import { afterAll, describe, expect, it } from "vitest";
import { dequantizeMxfp4, encodeMxfp4 } from "../../../formats/index.js";
import { MatmulPool } from "../../kernels/pool.js";
import type { HostTensor } from "../../loader/host-tensor.js";
import { WeightSource } from "../../loader/weight-source.js";
import type { ForwardContext } from "../../model/model.js";
import { Rng } from "../../tensor/random.js";
import { putParameters } from "../../tiny/weights.js";
import {
  limitedSwiglu,
  tinyHashExpert,
  V4Moe,
  type V4MoeSpec,
  v4MoeNames,
  v4MoeParameters,
} from "./v4-moe.js";

const pool = new MatmulPool(1, { simd: false });
afterAll(() => pool.close());

const H = 32;
const I = 32;
const E = 6;
const V = 20;
const names = v4MoeNames("model.layers.0");
const spec = (routing: V4MoeSpec["routing"]): V4MoeSpec => ({
  routing,
  numExperts: E,
  topK: 2,
  intermediateSize: I,
  routedScalingFactor: 1.5,
  normTopKProb: true,
  swigluLimit: 0.4,
  vocabSize: V,
});

function tensorsOf(s: V4MoeSpec, seed: number): Map<string, HostTensor> {
  const tensors = new Map<string, HostTensor>();
  putParameters(tensors, seed, v4MoeParameters(names, s, H));
  if (s.routing === "hash") {
    const table = hashTable(s);
    tensors.set(names.table, { dtype: "I64", shape: [V, s.topK], data: i64Bytes(table) });
  }
  return tensors;
}

/** A hash layer's tiny table, as the parameters declare it. */
function hashTable(s: V4MoeSpec): Int32Array {
  return Int32Array.from({ length: s.vocabSize * s.topK }, (_, i) => tinyHashExpert(s, i));
}

function i64Bytes(values: Int32Array): Uint8Array {
  const out = new Uint8Array(values.length * 8);
  const view = new DataView(out.buffer);
  values.forEach((v, i) => {
    view.setBigInt64(8 * i, BigInt(v), true);
  });
  return out;
}

const load = (s: V4MoeSpec, tensors: Map<string, HostTensor>) =>
  V4Moe.load(new WeightSource((n) => tensors.get(n), [...tensors.keys()], "test"), names, s, H);

function ctxOf(tokens: readonly number[]): ForwardContext {
  return { pool, batch: { tokens: Int32Array.from(tokens) } } as unknown as ForwardContext;
}

/** HF `DeepseekV4SparseMoeBlock` for one token, in f64: router, chosen experts, clamp, shared expert. */
function reference(s: V4MoeSpec, tw: Map<string, HostTensor>, x: Float32Array, token: number): Float64Array {
  const W = (n: string) => tw.get(n)?.data as Float32Array;
  const mv = (w: Float32Array, at: number, rows: number, cols: number, v: ArrayLike<number>) =>
    Float64Array.from({ length: rows }, (_, i) => {
      let acc = 0;
      for (let j = 0; j < cols; j++) acc += (w[at + i * cols + j] as number) * (v[j] as number);
      return acc;
    });
  const logits = mv(W(`${names.router}.weight`), 0, E, H, x);
  const scores = logits.map((l) => Math.sqrt(Math.log1p(Math.exp(l))));
  let chosen: number[];
  if (s.routing === "hash") {
    const table = hashTable(s);
    chosen = [table[token * 2] as number, table[token * 2 + 1] as number];
  } else {
    const bias = W(names.bias);
    const corrected = (e: number) => (scores[e] as number) + (bias[e] as number);
    chosen = [...scores.keys()].sort((a, b) => corrected(b) - corrected(a)).slice(0, 2);
  }
  const total = chosen.reduce((a, e) => a + (scores[e] as number), 0);
  const silu = (g: number) => g / (1 + Math.exp(-g));
  const out = new Float64Array(H);
  for (const e of chosen) {
    const gu = mv(W(names.gateUp), e * 2 * I * H, 2 * I, H, x);
    const act = Array.from({ length: I }, (_, i) => {
      const g = Math.min(gu[i] as number, s.swigluLimit);
      const u = Math.min(Math.max(gu[I + i] as number, -s.swigluLimit), s.swigluLimit);
      return silu(g) * u;
    });
    const y = mv(W(names.down), e * H * I, H, I, act);
    const w = ((scores[e] as number) / total) * s.routedScalingFactor;
    for (let i = 0; i < H; i++) out[i] = (out[i] as number) + w * (y[i] as number);
  }
  const g = mv(W(`${names.shared}.gate_proj.weight`), 0, I, H, x);
  const u = mv(W(`${names.shared}.up_proj.weight`), 0, I, H, x);
  const y = mv(
    W(`${names.shared}.down_proj.weight`),
    0,
    H,
    I,
    Array.from({ length: I }, (_, i) => silu(g[i] as number) * (u[i] as number)),
  );
  for (let i = 0; i < H; i++) out[i] = (out[i] as number) + (y[i] as number);
  return out;
}

describe("DeepSeek-V4 MoE", () => {
  const T = 5;
  const tokens = [3, 17, 3, 8, 0];
  const h = new Rng(4).fillNormal(new Float32Array(T * H), 1);

  it("clamps the gate above and the up half both ways, gate columns first", () => {
    const got = limitedSwiglu(Float32Array.from([2, -3, 0.5, 5, -5, 0.25]), 1, 3, 1);
    const silu = (g: number) => g / (1 + Math.exp(-g));
    expect(Array.from(got)).toEqual([silu(1) * 1, silu(-3) * -1, silu(0.5) * 0.25].map(Math.fround));
  });

  for (const routing of ["topk", "hash"] as const) {
    it(`${routing}: equals HF's block token by token`, () => {
      const s = spec(routing);
      const tensors = tensorsOf(s, 9);
      const got = load(s, tensors).forward(h, ctxOf(tokens));
      for (let t = 0; t < T; t++) {
        const expected = reference(s, tensors, h.subarray(t * H, (t + 1) * H), tokens[t] as number);
        for (let i = 0; i < H; i++) expect(got[t * H + i]).toBeCloseTo(expected[i] as number, 4);
      }
    });
  }

  it("hash: routes by the token id, not the hidden state", () => {
    const s = spec("hash");
    const moe = load(s, tensorsOf(s, 9));
    const a = moe.forward(h, ctxOf(tokens));
    const b = moe.forward(h, ctxOf([4, 17, 3, 8, 0]));
    expect(a.subarray(H)).toEqual(b.subarray(H));
    expect(a.subarray(0, H)).not.toEqual(b.subarray(0, H));
  });

  it("gives the same bits from MXFP4 experts as from their dequantized f32 values", () => {
    const s = spec("topk");
    const f32 = tensorsOf(s, 9);
    const mx = new Map(f32);
    const f32Too = new Map(f32);
    for (const [name, rows, cols] of [
      [names.gateUp, 2 * I, H],
      [names.down, H, I],
    ] as const) {
      const { blocks, scales } = encodeMxfp4(f32.get(name)?.data as Float32Array);
      mx.delete(name);
      mx.set(`${name}_blocks`, { dtype: "U8", shape: [E, rows, cols / 32, 16], data: blocks });
      mx.set(`${name}_scales`, { dtype: "U8", shape: [E, rows, cols / 32], data: scales });
      f32Too.set(name, { dtype: "F32", shape: [E, rows, cols], data: dequantizeMxfp4(blocks, scales) });
    }
    const fromMx = load(s, mx);
    expect(fromMx.outputTensors[0]).toBe(`${names.down}_blocks`);
    expect(fromMx.forward(h, ctxOf(tokens))).toEqual(load(s, f32Too).forward(h, ctxOf(tokens)));
  });

  it("refuses a hash table naming an expert the layer lacks, naming the tensor", () => {
    const s = spec("hash");
    const tensors = tensorsOf(s, 9);
    const table = hashTable(s);
    table[7] = E;
    tensors.set(names.table, { dtype: "I64", shape: [V, 2], data: i64Bytes(table) });
    expect(() => load(s, tensors)).toThrow(
      /model\.layers\.0\.mlp\.gate\.tid2eid: token 3 is routed to experts \[.*, 6\]/,
    );
    tensors.set(names.table, { dtype: "I64", shape: [V, 3], data: i64Bytes(new Int32Array(V * 3)) });
    expect(() => load(s, tensors)).toThrow(/tid2eid has shape \[20, 3\] but config.json implies \[20, 2\]/);
  });
});
