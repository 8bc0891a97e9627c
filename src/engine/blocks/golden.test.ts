/**
 * An independent check of the block kernels against torch.
 *
 * Where the golden values come from: fixtures/golden.json was written once by a throwaway Python script
 * (torch 1.13, Debian's python3-torch, everything in float64) that implements the same math directly from
 * the public sources: fla's `naive_recurrent_kda`, `naive_chunk_kda` (whose result it checked against the
 * recurrence, agreeing to 3e-16), `naive_kda_gate` and `l2norm`; torch's own `F.conv1d` (groups = C) for
 * the short convolution, which is what fla's ShortConvolution is; and transformers'
 * `DeepseekV4HyperConnection`, `DeepseekV4HyperHead` and `DeepseekV4DecoderLayer.forward` for mHC. Its
 * inputs are float32 values (stored exactly); its expected outputs are float64.
 *
 * Tolerances: the kernels store every result (and, for KDA, q, k, g and β before the recurrence) as
 * float32, so each compared value carries a few float32 roundings (u = 2^-24 ≈ 6e-8 each) against a
 * float64 reference. Measured relative errors, normwise (max |Δ| / max |expected|): KDA output 7.3e-8 and
 * state 5.5e-8 (reference, fused and chunked alike), g 1e-8, β 3e-8; short conv 3.4e-8 (tail exact);
 * mHC at most 6.2e-8. The tests assert 5e-7, about 7× the worst. What that catches, measured: a
 * transposed comb moves the new streams by 4e-2; dropping hc_eps moves pre by 1.2e-6. One Sinkhorn
 * iteration more or less is invisible here (the projection has converged by 20), so mhc.test.ts pins
 * the iteration count exactly instead.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { shortConv } from "./conv/short-conv.js";
import { kdaChunked } from "./linear-attention/kda-chunked.js";
import { kdaGate, l2NormalizeHeads } from "./linear-attention/kda-gate.js";
import { kdaRecurrent, kdaRecurrentFused } from "./linear-attention/kda-recurrence.js";
import { collapseStreams, expandStreams, hyperConnectionWeights, hyperHead } from "./residual/mhc.js";

const TOLERANCE = 5e-7;

interface Case<I extends string, E extends string> {
  inputs: Record<I, number[]>;
  expected: Record<E, number[]>;
}

interface Golden {
  kda: Case<"q" | "k" | "v" | "f" | "b" | "aLog" | "dtBias" | "state", "g" | "beta" | "out" | "state"> & {
    T: number;
    H: number;
    dk: number;
    dv: number;
  };
  shortConv: Case<"x" | "weight" | "tail", "out" | "outSilu" | "tail"> & { T: number; C: number; K: number };
  mhc: Case<
    "streams" | "fn" | "base" | "scale" | "blockOut" | "headFn" | "headBase" | "headScale",
    "pre" | "post" | "comb" | "collapsed" | "next" | "head"
  > & { T: number; n: number; H: number; sinkhornIters: number; hcEps: number; normEps: number };
}

const golden = JSON.parse(
  readFileSync(join(import.meta.dirname, "fixtures", "golden.json"), "utf8"),
) as Golden;

function normwiseError(actual: Float32Array, expected: number[]): number {
  expect(actual.length).toBe(expected.length);
  let diff = 0;
  let scale = 0;
  expected.forEach((value, e) => {
    diff = Math.max(diff, Math.abs((actual[e] as number) - value));
    scale = Math.max(scale, Math.abs(value));
  });
  return diff / scale;
}

function expectClose(actual: Float32Array, expected: number[]): void {
  expect(normwiseError(actual, expected)).toBeLessThan(TOLERANCE);
}

describe("golden values from torch (float64)", () => {
  it("KDA: gate, L2 norms and the recurrence (reference, fused, chunked with a ragged last chunk)", () => {
    const { T, H, dk, dv, inputs, expected } = golden.kda;
    const q = Float32Array.from(inputs.q);
    const k = Float32Array.from(inputs.k);
    l2NormalizeHeads(q, T * H, dk, dk ** -0.5);
    l2NormalizeHeads(k, T * H, dk);
    const g = new Float32Array(T * H * dk);
    const beta = new Float32Array(T * H);
    kdaGate(
      Float32Array.from(inputs.f),
      Float32Array.from(inputs.b),
      Float32Array.from(inputs.aLog),
      Float32Array.from(inputs.dtBias),
      T,
      H,
      dk,
      g,
      beta,
    );
    expectClose(g, expected.g);
    expectClose(beta, expected.beta);
    const v = Float32Array.from(inputs.v);
    const kernels = [
      (state: Float32Array, out: Float32Array) => kdaRecurrent(q, k, v, g, beta, T, H, dk, dv, state, out),
      (state: Float32Array, out: Float32Array) =>
        kdaRecurrentFused(q, k, v, g, beta, T, H, dk, dv, state, out),
      (state: Float32Array, out: Float32Array) => kdaChunked(q, k, v, g, beta, T, H, dk, dv, state, out, 4),
    ];
    for (const kernel of kernels) {
      const state = Float32Array.from(inputs.state);
      const out = new Float32Array(T * H * dv);
      kernel(state, out);
      expectClose(out, expected.out);
      expectClose(state, expected.state);
    }
  });

  it("short convolution from a carried tail, with and without SiLU", () => {
    const { T, C, K, inputs, expected } = golden.shortConv;
    for (const silu of [false, true]) {
      const tail = Float32Array.from(inputs.tail);
      const out = new Float32Array(T * C);
      shortConv(Float32Array.from(inputs.x), Float32Array.from(inputs.weight), tail, T, C, K, out, silu);
      expectClose(out, silu ? expected.outSilu : expected.out);
      expectClose(tail, expected.tail);
    }
  });

  it("mHC: pre, post, Sinkhorn comb, collapse, expand and the head", () => {
    const { T, n, H, inputs, expected } = golden.mhc;
    const config = {
      streams: n,
      sinkhornIters: golden.mhc.sinkhornIters,
      hcEps: golden.mhc.hcEps,
      normEps: golden.mhc.normEps,
    };
    const streams = Float32Array.from(inputs.streams);
    const pre = new Float32Array(T * n);
    const post = new Float32Array(T * n);
    const comb = new Float32Array(T * n * n);
    const site = {
      fn: Float32Array.from(inputs.fn),
      base: Float32Array.from(inputs.base),
      scale: Float32Array.from(inputs.scale),
    };
    hyperConnectionWeights(streams, site, config, T, H, pre, post, comb);
    expectClose(pre, expected.pre);
    expectClose(post, expected.post);
    expectClose(comb, expected.comb);
    const collapsed = new Float32Array(T * H);
    collapseStreams(streams, pre, T, n, H, collapsed);
    expectClose(collapsed, expected.collapsed);
    const next = new Float32Array(T * n * H);
    expandStreams(Float32Array.from(inputs.blockOut), streams, post, comb, T, n, H, next);
    expectClose(next, expected.next);
    const head = new Float32Array(T * H);
    const headWeights = {
      fn: Float32Array.from(inputs.headFn),
      base: Float32Array.from(inputs.headBase),
      scale: Float32Array.from(inputs.headScale),
    };
    hyperHead(streams, headWeights, config, T, H, head);
    expectClose(head, expected.head);
  });
});
