import { afterAll, describe, expect, it } from "vitest";
import { BringupError } from "../../../common/errors.js";
import { dequantizeMxfp4, encodeMxfp4 } from "../../../formats/index.js";
import { MatmulPool } from "../../kernels/pool.js";
import type { HostTensor } from "../../loader/host-tensor.js";
import { WeightSource } from "../../loader/weight-source.js";
import type { ForwardContext } from "../../model/model.js";
import { Rng } from "../../tensor/random.js";
import { putParameters } from "../../tiny/weights.js";
import { LatentMoe, type LatentMoeSpec, latentMoeNames, latentMoeParameters } from "./latent-moe.js";
import { route } from "./routing.js";

const pool = new MatmulPool(1, { simd: false });
afterAll(() => pool.close());
const ctx = { pool } as unknown as ForwardContext;

const H = 64;
const spec: LatentMoeSpec = {
  routing: {
    numExperts: 4,
    topK: 2,
    intermediateSize: 32,
    scoring: "sigmoid",
    normTopKProb: true,
    routedScalingFactor: 2.5,
    numGroups: 1,
    topKGroups: 1,
  },
  latentSize: 32,
  sharedIntermediateSize: 32,
  expertNormEps: 1e-5,
};
const n = latentMoeNames("m");

/** The block's declared parameters drawn as a tiny model draws them, the norms made non-trivial. */
function tensors(s: LatentMoeSpec = spec): Map<string, HostTensor> {
  const t = new Map<string, HostTensor>();
  const { block, experts } = latentMoeParameters("m", s, H);
  putParameters(t, 3, block);
  for (const e of experts) putParameters(t, 3, e);
  const rng = new Rng(9);
  for (let e = 0; e < s.routing.numExperts; e++) {
    const norm = rng.fillNormal(new Float32Array(s.latentSize), 0.5).map((v) => 1 + v);
    t.set(n.expertNorm(e), { dtype: "F32", shape: [s.latentSize], data: norm });
  }
  return t;
}

const load = (t: Map<string, HostTensor>, s: LatentMoeSpec = spec) =>
  LatentMoe.load(new WeightSource((name) => t.get(name), [...t.keys()], "test"), "m", s, H);

const data = (t: Map<string, HostTensor>, name: string) => (t.get(name) as HostTensor).data as Float32Array;

/** y = W x for W [rows, cols] row-major, in float64. */
function matvec(w: Float32Array, rows: number, cols: number, x: ArrayLike<number>): number[] {
  return Array.from({ length: rows }, (_, r) => {
    let s = 0;
    for (let c = 0; c < cols; c++) s += (w[r * cols + c] as number) * (x[c] as number);
    return s;
  });
}
const relu2 = (v: number[]) => v.map((x) => Math.max(x, 0) ** 2);

/** The block written out token by token in float64, as the port's page describes it. */
function naive(t: Map<string, HostTensor>, h: Float32Array): number[] {
  const { numExperts: E, intermediateSize: I } = spec.routing;
  const L = spec.latentSize;
  const S = spec.sharedIntermediateSize;
  const out: number[] = [];
  for (let tok = 0; tok < h.length / H; tok++) {
    const x = h.subarray(tok * H, (tok + 1) * H);
    const logits = Float32Array.from(matvec(data(t, `${n.gate}.weight`), E, H, x));
    const { experts, weights } = route(logits, 0, spec.routing, data(t, n.bias));
    const latent = matvec(data(t, `${n.down}.weight`), L, H, x);
    const mixed = new Array<number>(L).fill(0);
    experts.forEach((e, r) => {
      const y = matvec(
        data(t, `${n.expertDown(e)}.weight`),
        L,
        I,
        relu2(matvec(data(t, `${n.expertUp(e)}.weight`), I, L, latent)),
      );
      const rms = Math.sqrt(y.reduce((a, v) => a + v * v, 0) / L + spec.expertNormEps);
      const g = data(t, n.expertNorm(e));
      for (let i = 0; i < L; i++)
        mixed[i] =
          (mixed[i] as number) + (weights[r] as number) * ((y[i] as number) / rms) * (g[i] as number);
    });
    const routed = matvec(data(t, `${n.up}.weight`), H, L, mixed);
    const shared = matvec(
      data(t, `${n.sharedDown}.weight`),
      H,
      S,
      relu2(matvec(data(t, `${n.sharedUp}.weight`), S, H, x)),
    );
    out.push(...routed.map((v, i) => v + (shared[i] as number)));
  }
  return out;
}

describe("LatentMoe", () => {
  const h = new Rng(2).fillNormal(new Float32Array(6 * H), 1);

  it("routes on the full hidden state, runs the experts at the latent width with a norm on each output, and adds the shared expert", () => {
    const t = tensors();
    const got = load(t).forward(h, ctx);
    const want = naive(t, h);
    for (let i = 0; i < want.length; i++) expect(got[i]).toBeCloseTo(want[i] as number, 4);
  });

  it("normalizes each expert's output before the combine: scaling an expert's down projection changes nothing", () => {
    // An epsilon far below any expert output's mean square, so the norm divides a scale out all but
    // exactly: a norm after the combine, or none, would move the output by the scales (2 to 16).
    const exact = { ...spec, expertNormEps: 1e-12 };
    const t = tensors();
    const before = load(t, exact).forward(h, ctx);
    const scaled = new Map(t);
    for (let e = 0; e < spec.routing.numExperts; e++) {
      const name = `${n.expertDown(e)}.weight`;
      const w = t.get(name) as HostTensor;
      scaled.set(name, { ...w, data: (w.data as Float32Array).map((v) => v * 2 ** (e + 1)) });
    }
    const after = load(scaled, exact).forward(h, ctx);
    for (let i = 0; i < before.length; i++) expect(after[i]).toBeCloseTo(before[i] as number, 5);
    // Scaling the norm's own weight does change the output: the norm is what sets each expert's size.
    const normScaled = new Map(t);
    normScaled.set(n.expertNorm(0), {
      ...(t.get(n.expertNorm(0)) as HostTensor),
      data: data(t, n.expertNorm(0)).map((v) => 3 * v),
    });
    expect(Array.from(load(normScaled, exact).forward(h, ctx))).not.toEqual(Array.from(before));
  });

  it("runs MXFP4 experts as their dequantized values", () => {
    const t = tensors();
    const mx = new Map(t);
    const deq = new Map(t);
    for (let e = 0; e < spec.routing.numExperts; e++) {
      for (const base of [n.expertUp(e), n.expertDown(e)]) {
        const w = t.get(`${base}.weight`) as HostTensor;
        const [rows, cols] = w.shape as [number, number];
        const { blocks, scales } = encodeMxfp4(w.data as Float32Array);
        mx.delete(`${base}.weight`);
        mx.set(`${base}.weight_blocks`, { dtype: "U8", shape: [rows, cols / 32, 16], data: blocks });
        mx.set(`${base}.weight_scales`, { dtype: "U8", shape: [rows, cols / 32], data: scales });
        deq.set(`${base}.weight`, { ...w, data: dequantizeMxfp4(blocks, scales) });
      }
    }
    expect(Array.from(load(mx).forward(h, ctx))).toEqual(Array.from(load(deq).forward(h, ctx)));
  });

  it("refuses a latent width the expert tensors do not have, naming moe_latent_size and the tensor", () => {
    const wide = { ...spec, latentSize: 64 };
    const t = tensors();
    // The latent projections agree with the wider latent; the experts do not.
    const { block } = latentMoeParameters("m", wide, H);
    putParameters(t, 3, { fc1: block.fc1, fc2: block.fc2 });
    let error: unknown;
    try {
      load(t, wide);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(BringupError);
    expect((error as BringupError).code).toBe("MODEL_WEIGHTS_MISMATCH");
    expect((error as BringupError).message).toBe(
      "test: moe_latent_size 64 does not match m.experts.0.up_proj.weight, whose latent width (its cols) is 32; set moe_latent_size to the width the latent projections and experts share.",
    );
    expect((error as BringupError).message).not.toMatch(/\n/);
  });
});
