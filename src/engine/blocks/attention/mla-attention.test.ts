import { afterAll, describe, expect, it } from "vitest";
import { MatmulPool } from "../../kernels/pool.js";
import { Rng } from "../../tensor/random.js";
import { mlaRopeSwitch } from "./mla-attention.js";
import {
  MLA_TEST_HIDDEN as H,
  type MlaMatrices,
  maxAbsDiff,
  mlaBlock,
  type ReferenceRope,
  randomMla,
  referenceRope,
  runSequence,
  MLA_TEST_SPEC as S,
  TEST_YARN,
  TEST_YARN_SCALING,
} from "./mla-fixture.js";

const pool = new MatmulPool(2);
afterAll(() => pool.close());

const form = (value: string) => new Map([["mla_form", value]]);

/**
 * DeepSeek-V3's naive MLA (inference/model.py, attn_impl "naive") written out in f64 over the whole
 * sequence, without a cache: q = q_b(norm(q_a x)), [c, k_pe] = kv_a x, k/v per head = kv_b(norm(c)),
 * RoPE as `rope` gives it (DeepSeek's complex rotation of adjacent pairs unless halfSplit; none
 * without a base, as Kimi Linear's MLA layers run), causal softmax scaled by (nope + rope)^-1/2
 * (times YaRN's multiplier), o_proj.
 */
function naiveMla(
  m: MlaMatrices,
  x: Float32Array,
  n: number,
  rope: ReferenceRope = { theta: S.ropeTheta ?? null },
): Float64Array {
  const { numHeads: nh, qLoraRank: r, kvLoraRank: C, qkNopeHeadDim: dn, qkRopeHeadDim: dr, vHeadDim: dv } = S;
  const matvec = (w: Float32Array, rows: number, cols: number, v: ArrayLike<number>) =>
    Float64Array.from({ length: rows }, (_, i) => {
      let s = 0;
      for (let j = 0; j < cols; j++) s += (w[i * cols + j] as number) * (v[j] as number);
      return s;
    });
  const rms = (v: Float64Array, w: Float32Array) => {
    let ss = 0;
    for (const a of v) ss += a * a;
    const inv = 1 / Math.sqrt(ss / v.length + 1e-6);
    return v.map((a, i) => a * inv * (w[i] as number));
  };
  const { invFreq, attentionFactor, softmax } = referenceRope(rope, dr);
  const rotate = (v: Float64Array, offset: number, pos: number) => {
    if (rope.theta === null) return;
    for (let i = 0; i < dr / 2; i++) {
      const angle = pos * (invFreq[i] as number);
      const [cos, sin] = [Math.cos(angle) * attentionFactor, Math.sin(angle) * attentionFactor];
      const [ia, ib] = rope.halfSplit
        ? [offset + i, offset + i + dr / 2]
        : [offset + 2 * i, offset + 2 * i + 1];
      const [a, b] = [v[ia] as number, v[ib] as number];
      v[ia] = a * cos - b * sin;
      v[ib] = a * sin + b * cos;
    }
  };
  const qs: Float64Array[] = [];
  const ks: Float64Array[] = [];
  const vs: Float64Array[] = [];
  for (let t = 0; t < n; t++) {
    const xt = x.subarray(t * H, (t + 1) * H);
    const q = matvec(m.qB, nh * (dn + dr), r, rms(matvec(m.qA, r, H, xt), m.qANorm));
    for (let h = 0; h < nh; h++) rotate(q, h * (dn + dr) + dn, t);
    const kv = matvec(m.kvA, C + dr, H, xt);
    const kPe = kv.slice(C);
    rotate(kPe, 0, t);
    const up = matvec(m.kvB, nh * (dn + dv), C, rms(kv.slice(0, C), m.kvANorm));
    const k = new Float64Array(nh * (dn + dr));
    const v = new Float64Array(nh * dv);
    for (let h = 0; h < nh; h++) {
      k.set(up.subarray(h * (dn + dv), h * (dn + dv) + dn), h * (dn + dr));
      k.set(kPe, h * (dn + dr) + dn);
      v.set(up.subarray(h * (dn + dv) + dn, (h + 1) * (dn + dv)), h * dv);
    }
    qs.push(q);
    ks.push(k);
    vs.push(v);
  }
  const out = new Float64Array(n * H);
  for (let t = 0; t < n; t++) {
    const heads = new Float64Array(nh * dv);
    for (let h = 0; h < nh; h++) {
      const scores = Array.from({ length: t + 1 }, (_, s) => {
        let dot = 0;
        for (let i = 0; i < dn + dr; i++)
          dot += (qs[t]?.[h * (dn + dr) + i] as number) * (ks[s]?.[h * (dn + dr) + i] as number);
        return (dot * softmax) / Math.sqrt(dn + dr);
      });
      const max = Math.max(...scores);
      const e = scores.map((a) => Math.exp(a - max));
      const sum = e.reduce((a, b) => a + b, 0);
      for (let j = 0; j < dv; j++)
        heads[h * dv + j] = e.reduce((acc, p, s) => acc + (p / sum) * (vs[s]?.[h * dv + j] as number), 0);
    }
    out.set(matvec(m.o, H, nh * dv, heads), t * H);
  }
  return out;
}

describe("multi-head latent attention", () => {
  const m = randomMla(5);
  const block = mlaBlock(m);
  const n = 23;
  const x = new Rng(6).fillNormal(new Float32Array(n * H), 1);

  it("caches only the latent and the shared rotary key per token", () => {
    expect(block.states(new Map())).toEqual({
      latent: { kind: "latent", latentDim: S.kvLoraRank, ropeDim: S.qkRopeHeadDim },
    });
  });

  it("without a RoPE base leaves the rotary part unrotated, as Kimi Linear's naive MLA", () => {
    const { ropeTheta: _, ...spec } = S;
    const noRope = mlaBlock(m, spec);
    const reference = Float32Array.from(naiveMla(m, x, n, { theta: null }));
    const scale = Math.max(...reference.map(Math.abs));
    for (const value of ["absorbed", "expanded"]) {
      const { out } = runSequence(noRope, x, [n], pool, form(value));
      expect(maxAbsDiff(out, reference) / scale).toBeLessThan(1e-5);
    }
    expect(
      maxAbsDiff(runSequence(block, x, [n], pool, form("absorbed")).out, reference) / scale,
    ).toBeGreaterThan(1e-3);
  });

  it("absorbed and expanded forms equal DeepSeek's naive MLA within f32 rounding", () => {
    const reference = Float32Array.from(naiveMla(m, x, n));
    const scale = Math.max(...reference.map(Math.abs));
    for (const value of ["absorbed", "expanded"]) {
      const { out } = runSequence(block, x, [n], pool, form(value));
      expect(maxAbsDiff(out, reference) / scale).toBeLessThan(1e-5);
    }
  });

  it("YaRN rope_scaling as Kimi K2 gives it: frequencies, cos/sin factor and softmax mscale as HF DeepSeek-V3's", () => {
    const yarn = TEST_YARN;
    const spec = { ...S, ropeScaling: TEST_YARN_SCALING };
    const theta = S.ropeTheta ?? null;
    const reference = Float32Array.from(naiveMla(m, x, n, { theta, yarn }));
    const scale = Math.max(...reference.map(Math.abs));
    for (const value of ["absorbed", "expanded"]) {
      const { out } = runSequence(mlaBlock(m, spec), x, [n], pool, form(value));
      expect(maxAbsDiff(out, reference) / scale).toBeLessThan(1e-5);
    }
    // It changes the output: the unscaled block is far from this reference.
    expect(
      maxAbsDiff(runSequence(block, x, [n], pool, form("absorbed")).out, reference) / scale,
    ).toBeGreaterThan(1e-2);
  });

  it("mla_rope=half-split rotates the first half against the second as HF's glm_moe_dsa, the config's pairing by default", () => {
    const reference = Float32Array.from(naiveMla(m, x, n, { theta: S.ropeTheta ?? null, halfSplit: true }));
    const scale = Math.max(...reference.map(Math.abs));
    const halfSplit = new Map([["mla_rope", "half-split"]]);
    for (const value of ["absorbed", "expanded"]) {
      const { out } = runSequence(block, x, [n], pool, new Map([...halfSplit, ...form(value)]));
      expect(maxAbsDiff(out, reference) / scale).toBeLessThan(1e-5);
    }
    // A config's rope_interleave: false makes half-split the default; true (or absent) interleaved.
    const configured = mlaBlock(m, { ...S, ropeInterleave: false });
    expect(runSequence(configured, x, [n], pool, new Map()).out).toEqual(
      runSequence(block, x, [n], pool, halfSplit).out,
    );
    expect(mlaRopeSwitch(S).default).toBe("interleaved");
    expect(mlaRopeSwitch({ ...S, ropeInterleave: false }).default).toBe("half-split");
    expect(maxAbsDiff(runSequence(block, x, [n], pool, new Map()).out, reference) / scale).toBeGreaterThan(
      1e-3,
    );
  });

  it("absorbed decode equals expanded prefill within rounding, and each form is bit-identical across chunkings", () => {
    const steps = [9, 1, 1, 5, ...Array(7).fill(1)];
    const absorbed = runSequence(block, x, [n], pool, form("absorbed")).out;
    const expanded = runSequence(block, x, [n], pool, form("expanded")).out;
    expect(runSequence(block, x, steps, pool, form("absorbed")).out).toEqual(absorbed);
    expect(runSequence(block, x, steps, pool, form("expanded")).out).toEqual(expanded);
    // vLLM's split: the chunks of more than one token expand, the single-token steps absorb.
    const split = runSequence(block, x, steps, pool, form("prefill-expanded")).out;
    const scale = Math.max(...absorbed.map(Math.abs));
    expect(maxAbsDiff(split, absorbed) / scale).toBeLessThan(1e-5);
    expect(maxAbsDiff(split, expanded) / scale).toBeLessThan(1e-5);
    expect(maxAbsDiff(absorbed, expanded)).toBeGreaterThan(0);
    // The first chunk's tokens are the expanded form's bits, a decode step's the absorbed form's.
    expect(split.subarray(0, 9 * H)).toEqual(expanded.subarray(0, 9 * H));
    expect(split.subarray(9 * H, 10 * H)).toEqual(absorbed.subarray(9 * H, 10 * H));
  });

  it("with mla_cache=per-head keeps every head's key and value and gives the expanded form's bits", () => {
    const perHead = new Map([["mla_cache", "per-head"]]);
    const { qkNopeHeadDim: dn, qkRopeHeadDim: dr, vHeadDim: dv, numHeads: nh } = S;
    expect(block.states(perHead)).toEqual({
      kv: { kind: "full", numKvHeads: nh, headDim: dn + dr, vHeadDim: dv },
    });
    expect(block.states(form("expanded"))).toEqual(block.states(new Map()));
    // The same kv_b_proj rows times the same latents, summed in the same order.
    const expanded = runSequence(block, x, [n], pool, form("expanded")).out;
    const { out, storage } = runSequence(block, x, [n], pool, perHead);
    const cache = storage.kv("kv");
    expect(out).toEqual(expanded);
    expect(runSequence(block, x, [9, 1, 1, 5, ...Array(7).fill(1)], pool, perHead).out).toEqual(expanded);
    // Each head's stored key ends in the shared rotary key.
    const table = Array.from({ length: Math.ceil(n / 4) }, (_, b) => Math.ceil(n / 4) + 1 - b);
    const slot = cache.placement.slot(table, 11) * cache.keyStride;
    const rope = (hd: number) => cache.keys.subarray(slot + hd * (dn + dr) + dn, slot + (hd + 1) * (dn + dr));
    for (let hd = 1; hd < nh; hd++) expect(rope(hd)).toEqual(rope(0));
    expect(Math.max(...rope(0).map(Math.abs))).toBeGreaterThan(0);
  });

  it("writes each token's normalized latent and rotated key into its cache slot", () => {
    const cache = runSequence(block, x, [n], pool, form("absorbed")).storage.rows("latent");
    const C = S.kvLoraRank;
    // RMSNorm's output has root mean square equal to the norm weight's scale: check one slot's latent.
    const table = Array.from({ length: Math.ceil(n / 4) }, (_, b) => Math.ceil(n / 4) + 1 - b);
    const slot = cache.placement.slot(table, 7) * cache.width;
    const latent = cache.rows.subarray(slot, slot + C);
    const unscaled = latent.map((v, i) => v / (m.kvANorm[i] as number));
    const rms = Math.sqrt(unscaled.reduce((a, v) => a + v * v, 0) / C);
    expect(rms).toBeCloseTo(1, 4);
  });
});
