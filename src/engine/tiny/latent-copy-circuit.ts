import type { DsaIndexer } from "../blocks/attention/dsa-indexer.js";
import { MlaAttention } from "../blocks/attention/mla-attention.js";
import type { LoadedModel } from "../model/loaded-model.js";
import { copySlots } from "./copy-circuit.js";
import {
  type CopyCircuitOptions,
  type Fail,
  type Put,
  placeCircuit,
  roleWriter,
} from "./copy-circuit-placement.js";
import type { TinyModelFiles } from "./files.js";
import { filled, nearestRivalGap } from "./weights.js";

/** Indexer score (before its head weight) of the one position each previous-token indexer head picks. */
const INDEXER_PEAK = 10;

/**
 * The copy circuit (see copy-circuit-placement.ts) placed into a model whose attention is
 * multi-head latent attention, with or without DSA's indexer. MLA and its indexer have no biases,
 * so the residual carries one extra feature, 1 for every token (the last of `latentCopyHidden`),
 * that the layers read where a bias would be:
 *
 * - the first MLA layer's queries come from it alone (q_a_proj reads it, q_b_proj turns the unit
 *   latent into head δ's rotary query), its rotary key likewise (kv_a_proj_with_mqa), so head δ
 *   attends exactly δ back; the latent holds the token's match code and kv_b_proj's value rows copy
 *   it into head δ's output;
 * - the second layer's query latent holds the current n-gram's codes and its KV latent the codes of
 *   the n tokens before plus the token's output code; kv_b_proj's key rows of head 0 compare the
 *   codes, its value rows pass the output code on;
 * - with an indexer, the first layer's heads δ score RoPE-only keys (from k_norm's bias) that peak
 *   at δ back and are cut below zero elsewhere (a constant non-rotary term under the ReLU), so its
 *   top-k holds the n previous tokens; the second layer's head 0 scores the same code match as
 *   attention, so its top-k holds the earlier occurrence of the current n-gram;
 * - everything else (MLPs, experts, other layers) is silenced.
 *
 * RMSNorms that the block applies inside (q_a_layernorm, kv_a_layernorm) see latents whose norm the
 * circuit fixes (so many unit codes), so their weights undo that scale.
 */
export function placeLatentCopyCircuit(
  files: TinyModelFiles,
  model: LoadedModel,
  options: CopyCircuitOptions,
): TinyModelFiles {
  return placeCircuit(files, model, options, {
    layerKind: "latent attention",
    carries: (mixer) => mixer instanceof MlaAttention,
    constantFeature: true,
    construction: "latent copy circuit",
    // The constant feature is the residual's last.
    previousTokenHeads: (mixer, c) =>
      previousTokenHeads(mixer as MlaAttention, c.maxPos, c.options, c.hidden - 1, c.put, c.fail),
    inductionHead: (mixer, c) => inductionHead(mixer as MlaAttention, c.options, c.hidden - 1, c.put, c.fail),
  });
}

/** The latent circuit's sizes and margins, as the retrieval variants of latent-attention families use them. */
export const LATENT_CIRCUIT = {
  m: 8,
  u: 32,
  ngram: 6,
  matchLogit: 60,
  prevMargin: 30,
  outputLogit: 40,
} as const;

/**
 * The config.json fields of latent-attention layers sized for `LATENT_CIRCUIT` (DeepSeek-V3's
 * names): one head per previous token, 48 non-rotary and 8 rotary query/key features, a query
 * latent of the six match codes (48) and a KV latent of those plus an output code (80).
 */
export function latentCircuitAttention(): Record<string, number> {
  const { m, u, ngram } = LATENT_CIRCUIT;
  const codes = ngram * m;
  return {
    hidden_size: latentCopyHidden(m, u, ngram),
    num_attention_heads: ngram,
    q_lora_rank: codes,
    kv_lora_rank: codes + u,
    qk_nope_head_dim: codes,
    qk_rope_head_dim: 8,
    v_head_dim: u,
    rope_theta: 10_000,
  };
}

/** The hidden size the latent copy circuit needs: the copy slots and one constant feature. */
export function latentCopyHidden(m: number, u: number, ngram: number): number {
  return copySlots(m, u, ngram).hidden + 1;
}

/** RoPE's frequency of each rotated pair of `dim` features at base `theta`. */
export function invFreqs(dim: number, theta: number): number[] {
  return Array.from({ length: dim / 2 }, (_, f) => 1 / theta ** ((2 * f) / dim));
}

/** Matrix [rows, cols] with `entries` [row, col, value] set. */
export function sparse(
  rows: number,
  cols: number,
  entries: Iterable<readonly [number, number, number]>,
): Float32Array {
  const w = new Float32Array(rows * cols);
  for (const [r, c, v] of entries) w[r * cols + c] = v;
  return w;
}

/** Heads δ = 1..ngram attend exactly δ back and copy that token's match code into prev_δ. */
function previousTokenHeads(
  a: MlaAttention,
  maxPos: number,
  o: CopyCircuitOptions,
  one: number,
  put: Put,
  fail: Fail,
): void {
  const {
    numHeads: nh,
    qLoraRank: r,
    kvLoraRank: C,
    qkNopeHeadDim: dn,
    qkRopeHeadDim: dr,
    vHeadDim: dv,
  } = a.spec;
  const H = one + 1;
  const { ownM, prev } = copySlots(o.m, o.u, o.ngram);
  if (nh < o.ngram) fail(`the previous-token layer needs ${o.ngram} query heads, it has ${nh}.`);
  if (dv < o.m || C < o.m) fail(`the latent and value heads must hold ${o.m} features.`);
  if (r < 1) fail("the circuit reads queries through q_lora_rank; set it.");
  const theta =
    a.spec.ropeTheta ??
    fail("the previous-token heads find their distance through RoPE; give the layer a base.");
  const invFreq = invFreqs(dr, theta);
  const gap = nearestRivalGap(invFreq, maxPos);
  const amplitude = (o.prevMargin * Math.sqrt(dn + dr)) / gap;
  const w = roleWriter(put, a.parameters());
  const qk = dn + dr;
  const rows = function* (head: (h: number, δ: number) => Iterable<readonly [number, number, number]>) {
    for (let h = 0; h < o.ngram; h++) yield* head(h, h + 1);
  };
  w("qA", sparse(r, H, [[0, one, 1]]));
  w("qANorm", sparse(1, r, [[0, 0, 1 / Math.sqrt(r)]]));
  w(
    "qB",
    sparse(
      nh * qk,
      r,
      rows(function* (h, δ) {
        for (const [f, w] of invFreq.entries()) {
          yield [h * qk + dn + 2 * f, 0, amplitude * Math.cos(-w * δ)];
          yield [h * qk + dn + 2 * f + 1, 0, amplitude * Math.sin(-w * δ)];
        }
      }),
    ),
  );
  w(
    "kvA",
    sparse(C + dr, H, [
      ...Array.from({ length: o.m }, (_, i) => [i, ownM + i, 1] as const),
      ...invFreq.map((_, f) => [C + 2 * f, one, 1] as const),
    ]),
  );
  w("kvANorm", filled(C, 1 / Math.sqrt(C)));
  w(
    "kvB",
    sparse(
      nh * (dn + dv),
      C,
      rows(function* (h) {
        for (let j = 0; j < o.m; j++) yield [h * (dn + dv) + dn + j, j, 1];
      }),
    ),
  );
  w(
    "o",
    sparse(
      H,
      nh * dv,
      rows(function* (h) {
        for (let j = 0; j < o.m; j++) yield [prev + h * o.m + j, h * dv + j, 1];
      }),
    ),
  );
  if (a.indexer) previousTokenIndexer(a.indexer, maxPos, o, one, r, put, fail);
}

/** Indexer heads δ = 1..ngram score only the position δ back above zero. */
function previousTokenIndexer(
  x: DsaIndexer,
  maxPos: number,
  o: CopyCircuitOptions,
  one: number,
  r: number,
  put: Put,
  fail: Fail,
): void {
  const { numHeads: n, headDim: d, ropeDim: dr } = x.spec;
  const H = one + 1;
  if (n < o.ngram) fail(`the previous-token layer's indexer needs ${o.ngram} heads, it has ${n}.`);
  if (d <= dr) fail("the indexer heads need a feature beyond the rotary ones.");
  const invFreq = invFreqs(dr, x.spec.ropeTheta);
  const gap = nearestRivalGap(invFreq, maxPos);
  const amplitude = INDEXER_PEAK / (gap / 2);
  const half = dr / 2;
  const xw = roleWriter(put, x.parameters());
  const q: [number, number, number][] = [];
  for (let h = 0; h < o.ngram; h++) {
    const δ = h + 1;
    for (const [f, w] of invFreq.entries()) {
      q.push([h * d + f, 0, amplitude * Math.cos(-w * δ)]);
      q.push([h * d + f + half, 0, amplitude * Math.sin(-w * δ)]);
    }
    // Against the key's constant 1 past the rotary features: cuts every score but the peak below zero.
    q.push([h * d + dr, 0, -amplitude * (invFreq.length - gap / 2)]);
  }
  xw("qB", sparse(n * d, r, q));
  xw("k", new Float32Array(d * H));
  xw("kNorm", filled(d, 1));
  // LayerNorm of the zero vector is its bias: rotary pairs (1, 0) and a constant 1.
  xw("kNormBias", sparse(1, d, [...invFreq.map((_, f) => [0, f, 1] as const), [0, dr, 1]]));
  xw(
    "weights",
    sparse(
      n,
      H,
      Array.from({ length: o.ngram }, (_, h) => [h, one, 1] as const),
    ),
  );
}

/** Head 0 matches the last ngram tokens' codes against earlier positions' and copies an output code. */
function inductionHead(a: MlaAttention, o: CopyCircuitOptions, one: number, put: Put, fail: Fail): void {
  const {
    numHeads: nh,
    qLoraRank: r,
    kvLoraRank: C,
    qkNopeHeadDim: dn,
    qkRopeHeadDim: dr,
    vHeadDim: dv,
  } = a.spec;
  const H = one + 1;
  const { ownM, ownU, prev, outU } = copySlots(o.m, o.u, o.ngram);
  const codes = o.ngram * o.m;
  if (r < codes || dn < codes) fail(`q_lora_rank and qk_nope_head_dim must hold ${codes} match features.`);
  if (C < codes + o.u)
    fail(`kv_lora_rank must hold ${codes + o.u} features (match codes and an output code).`);
  if (dv < o.u) fail(`the value heads must hold ${o.u} features, they hold ${dv}.`);
  const gain = Math.sqrt(o.matchLogit * Math.sqrt(dn + dr));
  const querySlot = (i: number) => {
    const s = Math.floor(i / o.m);
    return (s === 0 ? ownM : prev + (s - 1) * o.m) + (i % o.m);
  };
  const w = roleWriter(put, a.parameters());
  const match = Array.from({ length: codes }, (_, i) => i);
  w(
    "qA",
    sparse(
      r,
      H,
      match.map((i) => [i, querySlot(i), 1] as const),
    ),
  );
  w("qANorm", filled(r, Math.sqrt(o.ngram / r)));
  w(
    "qB",
    sparse(
      nh * (dn + dr),
      r,
      match.map((i) => [i, i, gain] as const),
    ),
  );
  w(
    "kvA",
    sparse(C + dr, H, [
      ...match.map((i) => [i, prev + i, 1] as const),
      ...Array.from({ length: o.u }, (_, j) => [codes + j, ownU + j, 1] as const),
    ]),
  );
  w("kvANorm", filled(C, Math.sqrt((o.ngram + 1) / C)));
  w(
    "kvB",
    sparse(nh * (dn + dv), C, [
      ...match.map((i) => [i, i, gain] as const),
      ...Array.from({ length: o.u }, (_, j) => [dn + j, codes + j, 1] as const),
    ]),
  );
  w(
    "o",
    sparse(
      H,
      nh * dv,
      Array.from({ length: o.u }, (_, j) => [outU + j, j, 1] as const),
    ),
  );
  if (a.indexer) {
    const x = a.indexer;
    const { headDim: d, ropeDim: xr } = x.spec;
    if (d - xr < codes) fail(`the indexer heads need ${codes} features beyond the rotary ones.`);
    const xw = roleWriter(put, x.parameters());
    xw(
      "qB",
      sparse(
        x.spec.numHeads * d,
        r,
        match.map((i) => [xr + i, i, 1] as const),
      ),
    );
    xw(
      "k",
      sparse(
        d,
        H,
        match.map((i) => [xr + i, prev + i, 1] as const),
      ),
    );
    xw("kNorm", filled(d, 1));
    xw("kNormBias", new Float32Array(d));
    xw("weights", sparse(x.spec.numHeads, H, [[0, one, 1]]));
  }
}
