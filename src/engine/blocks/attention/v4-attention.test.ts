import { afterAll, describe, expect, it } from "vitest";
import { kvBytesPerSequence, planKvCache } from "../../cache/capacity.js";
import type { KvLayout } from "../../cache/state-spec.js";
import { layerStorage } from "../../cache/storage.js";
import { MatmulPool } from "../../kernels/pool.js";
import type { HostTensor } from "../../loader/host-tensor.js";
import { WeightSource } from "../../loader/weight-source.js";
import type { ForwardContext } from "../../model/model.js";
import { Rng } from "../../tensor/random.js";
import { putParameters } from "../../tiny/weights.js";
import { maxAbsDiff } from "./mla-fixture.js";
import {
  V4Attention,
  type V4AttentionSpec,
  v4AttentionNames,
  v4AttentionParameters,
} from "./v4-attention.js";

const pool = new MatmulPool(2);
afterAll(() => pool.close());

const H = 24;
const BLOCK = 4;
const base: V4AttentionSpec = {
  kind: "sliding",
  numHeads: 4,
  headDim: 16,
  ropeDim: 8,
  qLoraRank: 12,
  window: 5,
  oGroups: 2,
  oLoraRank: 6,
  ropeTheta: 10_000,
  compressRatio: 0,
  normEps: 1e-6,
};
const SPECS: Record<V4AttentionSpec["kind"], V4AttentionSpec> = {
  sliding: base,
  csa: { ...base, kind: "csa", compressRatio: 2, indexer: { numHeads: 2, headDim: 8, topK: 3 } },
  hca: { ...base, kind: "hca", compressRatio: 4 },
};
const names = v4AttentionNames("model.layers.0");

function tensorsOf(spec: V4AttentionSpec, seed: number): Map<string, HostTensor> {
  const tensors = new Map<string, HostTensor>();
  putParameters(tensors, seed, v4AttentionParameters(names, spec, H));
  // Norm weights away from one and sinks large enough to matter, so a misread one shows.
  const rng = new Rng(seed + 1);
  for (const [name, t] of tensors) {
    const data = t.data as Float32Array;
    if (name.endsWith("norm.weight")) for (let i = 0; i < data.length; i++) data[i] = 1 + 0.3 * rng.normal();
    if (name.endsWith(".sinks")) for (let i = 0; i < data.length; i++) data[i] = rng.normal();
  }
  return tensors;
}

function load(spec: V4AttentionSpec, tensors: Map<string, HostTensor>): V4Attention {
  return V4Attention.load(
    new WeightSource((n) => tensors.get(n), [...tensors.keys()], "test"),
    names,
    spec,
    H,
  );
}

/** Runs the block over x [n, H] in steps of `chunks` tokens under `layout`, as the engine plans and pages it. */
function run(
  block: V4Attention,
  x: Float32Array,
  chunks: readonly number[],
  layout: KvLayout,
  switches: ReadonlyMap<string, string> = new Map(),
): Float32Array {
  const n = chunks.reduce((a, b) => a + b, 0);
  const plan = planKvCache([block.states(switches)], layout, BLOCK);
  const need = plan.pools.map((p) => (p.pool === "blocks" ? p.placement.blocksNeeded(n) : 1));
  const storage = layerStorage(
    plan.layers[0] ?? [],
    need.map((k) => k + 2),
  );
  // Tables that are not the identity, so slots are read through them.
  const tables = need.map((k) => Array.from({ length: k }, (_, b) => k + 1 - b));
  const out = new Float32Array(n * H);
  let first = 0;
  for (const count of chunks) {
    const positions = Array.from({ length: count }, (_, i) => first + i);
    const ctx: ForwardContext = {
      pool,
      switches,
      batch: {
        tokens: new Int32Array(count),
        positions,
        blockTables: positions.map(() => tables),
        sequences: [{ first: 0, count, slot: -1 }],
        logitRows: [],
      },
    };
    out.set(block.forward(x.slice(first * H, (first + count) * H), ctx, storage), first * H);
    first += count;
  }
  return out;
}

/**
 * HF `DeepseekV4Attention` without a cache, written out in f64 over the whole sequence: every
 * compressed row from all positions at once, masks by position, the indexer's top-k by score.
 */
function reference(
  spec: V4AttentionSpec,
  tw: Map<string, HostTensor>,
  x: Float32Array,
  n: number,
): Float64Array {
  const { numHeads: nh, headDim: d, ropeDim: rd, qLoraRank: r, window, oGroups: g, oLoraRank: or } = spec;
  const get = (name: string) => tw.get(name)?.data as Float32Array;
  const mv = (name: string, rows: number, cols: number, v: ArrayLike<number>, at = 0) =>
    Float64Array.from({ length: rows }, (_, i) => {
      let s = 0;
      for (let j = 0; j < cols; j++) s += (get(name)[i * cols + j] as number) * (v[at + j] as number);
      return s;
    });
  const rms = (v: Float64Array, w?: Float32Array) => {
    const ss = v.reduce((a, b) => a + b * b, 0);
    const inv = 1 / Math.sqrt(ss / v.length + spec.normEps);
    return v.map((a, i) => a * inv * (w ? (w[i] as number) : 1));
  };
  const rope = (v: Float64Array, pos: number, sign = 1) => {
    const o = v.length - rd;
    for (let i = 0; i < rd / 2; i++) {
      const angle = (sign * pos) / spec.ropeTheta ** ((2 * i) / rd);
      const [a, b] = [v[o + 2 * i] as number, v[o + 2 * i + 1] as number];
      v[o + 2 * i] = a * Math.cos(angle) - b * Math.sin(angle);
      v[o + 2 * i + 1] = a * Math.sin(angle) + b * Math.cos(angle);
    }
    return v;
  };
  // Rows pooled from projections C, Z [n][series] with the compressor's bias and norm.
  const compress = (
    prefix: string,
    width: number,
    m: number,
    overlap: boolean,
    C: Float64Array[],
    Z: Float64Array[],
  ) => {
    const sw = overlap ? 2 * width : width;
    const bias = get(`${prefix}.position_bias`);
    const rows: Float64Array[] = [];
    for (let w = 0; (w + 1) * m <= n; w++) {
      const slots: [number, number, number][] = [];
      if (overlap && w > 0) for (let j = 0; j < m; j++) slots.push([(w - 1) * m + j, 0, j]);
      for (let j = 0; j < m; j++) slots.push([w * m + j, overlap ? width : 0, j]);
      const row = new Float64Array(width);
      for (let f = 0; f < width; f++) {
        const z = slots.map(([p, o, j]) => (Z[p]?.[o + f] as number) + (bias[j * sw + o + f] as number));
        const mx = Math.max(...z);
        const e = z.map((v) => Math.exp(v - mx));
        const sum = e.reduce((a, b) => a + b, 0);
        row[f] = slots.reduce((a, [p, o], s) => a + ((e[s] as number) / sum) * (C[p]?.[o + f] as number), 0);
      }
      rows.push(rope(rms(row, get(`${prefix}.kv_norm.weight`)), w * m));
    }
    return rows;
  };
  const xs = Array.from({ length: n }, (_, t) => x.subarray(t * H, (t + 1) * H));
  const qr = xs.map((xt) => rms(mv(`${names.qA}.weight`, r, H, xt), get(names.qANorm)));
  const q = qr.map((v, t) => {
    const all = mv(`${names.qB}.weight`, nh * d, r, v);
    return Array.from({ length: nh }, (_, hd) => rope(rms(all.slice(hd * d, (hd + 1) * d)), t));
  });
  const kv = xs.map((xt, t) => rope(rms(mv(`${names.kv}.weight`, d, H, xt), get(names.kvNorm)), t));
  const m = spec.compressRatio;
  const proj = (prefix: string, out: number) => xs.map((xt) => mv(`${prefix}.weight`, out, H, xt));
  let rows: Float64Array[] = [];
  if (spec.kind !== "sliding") {
    const c = names.compressor;
    const sw = spec.kind === "csa" ? 2 * d : d;
    rows = compress(
      c.kv.replace(/\.kv_proj$/, ""),
      d,
      m,
      spec.kind === "csa",
      proj(c.kv, sw),
      proj(c.gate, sw),
    );
  }
  let keysI: Float64Array[] = [];
  const ix = spec.indexer;
  if (ix) {
    const c = names.indexer.compressor;
    const sw = 2 * ix.headDim;
    keysI = compress(c.kv.replace(/\.kv_proj$/, ""), ix.headDim, m, true, proj(c.kv, sw), proj(c.gate, sw));
  }
  const out = new Float64Array(n * H);
  for (let t = 0; t < n; t++) {
    const visible = m > 0 ? Math.floor((t + 1) / m) : 0;
    let picked = Array.from({ length: visible }, (_, s) => s);
    if (ix && visible > ix.topK) {
      const qi = mv(`${names.indexer.qB}.weight`, ix.numHeads * ix.headDim, r, qr[t] as Float64Array);
      const wi = mv(`${names.indexer.weights}.weight`, ix.numHeads, H, xs[t] as Float32Array);
      const qh = Array.from({ length: ix.numHeads }, (_, hd) =>
        rope(qi.slice(hd * ix.headDim, (hd + 1) * ix.headDim), t),
      );
      const score = picked.map((s) =>
        qh.reduce((a, qv, hd) => {
          const dot = qv.reduce((acc, v, i) => acc + v * (keysI[s]?.[i] as number), 0);
          return (
            a + ((wi[hd] as number) / Math.sqrt(ix.numHeads)) * (Math.max(0, dot) / Math.sqrt(ix.headDim))
          );
        }, 0),
      );
      picked = picked.sort((a, b) => (score[b] as number) - (score[a] as number)).slice(0, ix.topK);
    }
    const keys: Float64Array[] = [];
    for (let s = Math.max(0, t - window + 1); s <= t; s++) keys.push(kv[s] as Float64Array);
    for (const s of picked) keys.push(rows[s] as Float64Array);
    const heads: Float64Array[] = [];
    for (let hd = 0; hd < nh; hd++) {
      const qv = q[t]?.[hd] as Float64Array;
      const logits = keys.map((k) => k.reduce((a, v, i) => a + v * (qv[i] as number), 0) / Math.sqrt(d));
      const sink = get(names.sinks)[hd] as number;
      const mx = Math.max(sink, ...logits);
      const e = logits.map((l) => Math.exp(l - mx));
      const sum = e.reduce((a, b) => a + b, Math.exp(sink - mx));
      const o = new Float64Array(d);
      keys.forEach((k, i) => {
        for (let j = 0; j < d; j++) o[j] = (o[j] as number) + ((e[i] as number) / sum) * (k[j] as number);
      });
      heads.push(rope(o, t, -1));
    }
    const flat = new Float64Array(nh * d);
    heads.forEach((o, hd) => {
      flat.set(o, hd * d);
    });
    const per = (nh * d) / g;
    const mid = new Float64Array(g * or);
    const oA = get(`${names.oA}.weight`);
    for (let gi = 0; gi < g; gi++)
      for (let i = 0; i < or; i++) {
        let s = 0;
        for (let j = 0; j < per; j++)
          s += (oA[(gi * or + i) * per + j] as number) * (flat[gi * per + j] as number);
        mid[gi * or + i] = s;
      }
    out.set(mv(`${names.oB}.weight`, H, g * or, mid), t * H);
  }
  return out;
}

describe("DeepSeek-V4 attention", () => {
  const n = 23;
  const x = new Rng(3).fillNormal(new Float32Array(n * H), 1);

  it("declares its window ring (K = V, one head), the compressor's source and rows, and the indexer's", () => {
    const states = load(SPECS.csa, tensorsOf(SPECS.csa, 1)).states(new Map());
    expect(states).toEqual({
      kv: { kind: "sliding-window", window: 5, numKvHeads: 1, headDim: 16, vHeadDim: 0 },
      compressorSource: { kind: "sliding-window", window: 5, numKvHeads: 1, headDim: 32, vHeadDim: 32 },
      compressed: { kind: "compressed", width: 16, ratio: 2 },
      indexerSource: { kind: "sliding-window", window: 5, numKvHeads: 1, headDim: 16, vHeadDim: 16 },
      indexerKeys: { kind: "compressed", width: 8, ratio: 2 },
    });
    const plan = planKvCache([states], "window-sized", BLOCK);
    expect(plan.pools.map((p) => p.key)).toEqual(["window:5", "compressed:2"]);
    // Past the ring, a sequence grows only by its compressed rows: (16 + 8) floats per 2 positions.
    const grow = kvBytesPerSequence(plan.pools, 4096 + 2 * BLOCK) - kvBytesPerSequence(plan.pools, 4096);
    expect(grow).toBe(4 * (16 + 8) * BLOCK);
  });

  for (const kind of ["sliding", "csa", "hca"] as const) {
    it(`${kind}: equals HF's uncached attention within f32 rounding`, () => {
      const spec = SPECS[kind];
      const tensors = tensorsOf(spec, 7);
      const expected = Float32Array.from(reference(spec, tensors, x, n));
      const scale = Math.max(...expected.map(Math.abs));
      const got = run(load(spec, tensors), x, [n], "full");
      expect(maxAbsDiff(got, expected) / scale).toBeLessThan(1e-5);
    });

    it(`${kind}: prefill and token-by-token decode agree bit for bit across compression boundaries`, () => {
      const spec = SPECS[kind];
      const block = load(spec, tensorsOf(spec, 11));
      const whole = run(block, x, [n], "full");
      const byToken = run(block, x, Array(n).fill(1), "window-sized");
      const chunked = run(block, x, [3, 5, 8, 7], "window-sized");
      expect(byToken).toEqual(whole);
      expect(chunked).toEqual(whole);
    });
  }

  it("v4_attention=dense: every layer attends every earlier key, as HF's attention with no window or rows", () => {
    const denseSwitch = new Map([["v4_attention", "dense"]]);
    for (const spec of [SPECS.csa, SPECS.hca]) {
      const tensors = tensorsOf(spec, 7);
      const block = load(spec, tensors);
      expect(block.states(denseSwitch)).toEqual({
        kv: { kind: "full", numKvHeads: 1, headDim: 16, vHeadDim: 0 },
      });
      const { indexer: _, ...plain } = spec;
      const asDense: V4AttentionSpec = { ...plain, kind: "sliding", window: n, compressRatio: 0 };
      const expected = Float32Array.from(reference(asDense, tensors, x, n));
      const scale = Math.max(...expected.map(Math.abs));
      const got = run(block, x, [5, 8, 10], "window-sized", denseSwitch);
      expect(maxAbsDiff(got, expected) / scale).toBeLessThan(1e-5);
    }
  });

  it("csa: the indexer's choice matters (attending every row differs)", () => {
    const tensors = tensorsOf(SPECS.csa, 7);
    const sparse = run(load(SPECS.csa, tensors), x, [n], "full");
    const everyRow = { ...SPECS.csa, indexer: { numHeads: 2, headDim: 8, topK: n } };
    const dense = run(load(everyRow, tensors), x, [n], "full");
    expect(maxAbsDiff(sparse, dense)).toBeGreaterThan(1e-3);
  });
});
