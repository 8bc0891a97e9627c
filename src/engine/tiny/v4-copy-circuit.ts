import { BringupError } from "../../common/errors.js";
import { V4Attention, v4AttentionRoles } from "../blocks/attention/v4-attention.js";
import type { LoadedModel } from "../model/loaded-model.js";
import { mtpHeadParameters, V4Mtp, type V4MtpConfig } from "../models/deepseek-v4-mtp.js";
import { copySlots } from "./copy-circuit.js";
import {
  type CircuitContext,
  type CopyCircuitOptions,
  circuitTensors,
  type Fail,
  placeCircuit,
  putRoles,
} from "./copy-circuit-placement.js";
import type { TinyModelFiles } from "./files.js";
import { invFreqs, latentCopyHidden, sparse } from "./latent-copy-circuit.js";
import { filled, nearestRivalGap } from "./weights.js";

/**
 * The copy circuit (see copy-circuit-placement.ts) placed into DeepSeek-V4's attention
 * (blocks/attention/v4-attention.ts), and its MTP layer made to draft by the same copying. V4's
 * attention has no biases, so the residual carries one feature that is 1 for every token (the
 * last), read where a bias would be; its query heads are RMS-normalized without a weight, so
 * their scale is set by the keys.
 *
 * - The sliding layer's heads δ = 1..ngram: the query latent is the constant feature, q_b_proj turns
 *   it into head δ's rotated pairs A·(cos, sin)(-ω δ); the shared key head holds the token's match
 *   code and rotated pairs (B, 0), so head δ's score B/√pairs · Σ cos(ω (i - j - δ)) peaks exactly δ
 *   back, prevMargin logits above every other position of the window. K = V: the value holds the
 *   match code too, and o_a_proj / o_b_proj write head δ's into slot prev_δ.
 * - The compressed sparse layer (csa, ratio R) retrieves. Its compressor pools each block of R
 *   positions into one row with a softmax per feature over the block's positions, plus
 *   position_bias (`ape`, a bias per feature and position in the block). The circuit's position
 *   bias gives feature group g only position g of the block (0 against -1e4; the overlapping
 *   window's half -1e4 throughout), so a row is the concatenation of its R positions' groups, each
 *   (the match codes of the ngram tokens before the position, the position's output code): nothing
 *   is averaged away. Query head g holds the current n-gram's codes in group g's key features, so
 *   it scores matchLogit per agreeing token against the position at g of each row; a head whose
 *   group holds no full match falls onto its sink, set half a token below a full match, and adds
 *   next to nothing. o_a_proj sums the heads' output-code features into o_b_proj's out_u. The
 *   layer's own window keys are zero (below every sink).
 * - Its indexer is built alike: its compressor's rows hold each group's match codes and a constant
 *   feature, its head g scores relu(agreeing tokens - (ngram - 1/2)) in group g, so only rows with
 *   a full match score above zero and the earlier occurrence is in its top-k.
 * - The MTP layer (models/deepseek-v4-mtp.ts) drafts one token further by the same layer: at
 *   position p, e_proj writes the next token's codes (embed(t[p+1])) as own_m and own_u and h_proj
 *   moves the main stream's codes one slot back (own_m → prev_1, prev_δ → prev_δ+1), so its input
 *   is the main model's at p + 1 and its csa layer, built as the main one, copies the token that
 *   followed the earlier occurrence of the n-gram ending at t[p+1]: the draft of t[p+2]. Its output
 *   has the main stream's layout one position on, so a further draft step chains the same way.
 * - Everything else (the MoE, other layers) is silenced and mHC made the plain residual.
 *
 * Sizes: v4CircuitAttention; `o_groups` must be 1 (each head's code to its own slot).
 */
export function placeV4CopyCircuit(
  files: TinyModelFiles,
  model: LoadedModel,
  options: CopyCircuitOptions,
): TinyModelFiles {
  const placed = placeCircuit(files, model, options, {
    layerKind: "DeepSeek-V4 attention",
    carries: (mixer) => mixer instanceof V4Attention,
    constantFeature: true,
    construction: "V4 copy circuit",
    previousTokenHeads: (mixer, c) => previousTokenHeads(mixer as V4Attention, c),
    inductionHead: (mixer, c) => inductionHead(mixer as V4Attention, c),
  });
  const drafter = model.model.drafter;
  if (!(drafter instanceof V4Mtp)) return placed;
  const { tensors, put, zero } = circuitTensors(placed);
  const fail: Fail = (message) => {
    throw new BringupError("RETRIEVAL_CONFIG_INVALID", `the retrieval variant's config: ${message}`);
  };
  const context: CircuitContext = {
    hidden: model.model.hiddenSize,
    maxPos: model.config.maxPositionEmbeddings,
    options,
    put,
    fail,
  };
  draftHead(drafter, model.config as unknown as V4MtpConfig, context, zero);
  return { ...placed, tensors };
}

/** The retrieval circuit's sizes and margins in V4's attention. */
export const V4_CIRCUIT = {
  // Match codes of 9 make the hidden size 9 + 32 + 6 × 9 + 32 + 1 = 128, a multiple of MXFP4's block.
  m: 9,
  u: 32,
  ngram: 6,
  matchLogit: 40,
  prevMargin: 30,
  outputLogit: 40,
} as const;

/** Rotated features of the circuit's heads. */
const ROPE = 8;
/** Positions per compressed sparse row the sizes are made for (a head per position of a row). */
const RATIO = 4;
const WINDOW = V4_CIRCUIT.ngram + 2;

/**
 * The config.json fields of V4 attention sized for V4_CIRCUIT (transformers' names), for a layout
 * whose compressed sparse rows pool 4 positions: six heads (one per previous token) over one
 * shared head of 4 × (54 match + 32 output features) plus 8 rotated; a query latent of the six
 * match codes and the constant (55); one output group whose latent holds the six match codes (54);
 * an indexer of 4 heads of 4 × 54 + 1 + 8 keeping its 8 best rows (one holds the match); a window
 * of 8, as far back as the previous-token heads reach and one more (a longer one only adds keys
 * that every layer reads and no head attends to).
 */
export function v4CircuitAttention(): Record<string, unknown> {
  const { m, u, ngram } = V4_CIRCUIT;
  const codes = ngram * m;
  return {
    hidden_size: latentCopyHidden(m, u, ngram),
    num_attention_heads: ngram,
    head_dim: RATIO * (codes + u) + ROPE,
    qk_rope_head_dim: ROPE,
    partial_rotary_factor: null,
    q_lora_rank: codes + 1,
    o_groups: 1,
    o_lora_rank: Math.max(codes, u),
    index_n_heads: RATIO,
    index_head_dim: RATIO * codes + 1 + ROPE,
    index_topk: 8,
    sliding_window: WINDOW,
  };
}

/** A gate bias far enough below any other that its position takes no share. */
const SHUT = -1e4;

function* range(n: number): Generator<number> {
  for (let i = 0; i < n; i++) yield i;
}

/** Heads δ = 1..ngram attend exactly δ back and copy that token's match code into prev_δ. */
function previousTokenHeads(a: V4Attention, c: CircuitContext): void {
  const { options: o, hidden: H, fail } = c;
  const one = H - 1;
  const { kind, numHeads: nh, headDim: d, ropeDim, qLoraRank: r, oGroups, oLoraRank: or, window } = a.spec;
  const { ownM, prev } = copySlots(o.m, o.u, o.ngram);
  if (kind !== "sliding") fail("the first V4 layer must be a sliding_attention layer (layer_types[0]).");
  if (nh < o.ngram) fail(`the previous-token layer needs ${o.ngram} query heads, it has ${nh}.`);
  if (oGroups !== 1) fail(`o_groups must be 1, got ${oGroups}.`);
  if (or < o.ngram * o.m) fail(`o_lora_rank must hold ${o.ngram * o.m} features (the match codes).`);
  if (d - ropeDim < o.m) fail(`head_dim must hold ${o.m} features beside the ${ropeDim} rotated.`);
  if (ropeDim < 2) fail("the previous-token heads find their distance through RoPE; rotate some features.");
  if (window <= o.ngram) fail(`sliding_window must exceed ${o.ngram}, got ${window}.`);
  const invFreq = invFreqs(ropeDim, a.spec.ropeTheta);
  const pairs = invFreq.length;
  const rot = d - ropeDim;
  // The key's rotated pairs (B, 0): B/√pairs times the gap to the nearest rival is prevMargin.
  const B = (o.prevMargin * Math.sqrt(pairs)) / nearestRivalGap(invFreq, window);
  // kv_norm sees a unit code and `pairs` ones: RMSNorm multiplies each by √(d / (1 + pairs)).
  const unit = 1 / Math.sqrt(d / (1 + pairs));
  const roles = v4AttentionRoles(a.names, a.spec, H);
  const heads = [...range(o.ngram)];
  putRoles(c.put, roles.own, {
    qA: sparse(r, H, [[0, one, 1]]),
    qANorm: filled(r, 1),
    qB: sparse(
      nh * d,
      r,
      heads.flatMap((h) =>
        invFreq.flatMap((w, f) => [
          [h * d + rot + 2 * f, 0, Math.cos(-w * (h + 1))] as const,
          [h * d + rot + 2 * f + 1, 0, Math.sin(-w * (h + 1))] as const,
        ]),
      ),
    ),
    kv: sparse(d, H, [
      ...Array.from({ length: o.m }, (_, i) => [i, ownM + i, 1] as const),
      ...invFreq.map((_, f) => [rot + 2 * f, one, 1] as const),
    ]),
    kvNorm: Float32Array.from({ length: d }, (_, i) => (i < o.m ? unit : i >= rot ? B * unit : 0)),
    oA: sparse(
      or,
      nh * d,
      heads.flatMap((h) => Array.from({ length: o.m }, (_, i) => [h * o.m + i, h * d + i, 1] as const)),
    ),
    oB: sparse(
      H,
      or,
      heads.flatMap((h) =>
        Array.from({ length: o.m }, (_, i) => [prev + h * o.m + i, h * o.m + i, 1] as const),
      ),
    ),
    // A sink as high as the nearest rival takes a negligible share.
    sinks: filled(nh, B * Math.sqrt(pairs) - o.prevMargin),
  });
}

/**
 * A csa layer retrieves: query head g matches the current n-gram against group g of each
 * compressed row (position g of its block) and copies that position's output code into out_u.
 */
function inductionHead(a: V4Attention, c: CircuitContext): void {
  const { options: o, hidden: H, fail } = c;
  const one = H - 1;
  const { kind, numHeads: nh, headDim: d, ropeDim, qLoraRank: r, oGroups, oLoraRank: or } = a.spec;
  const R = a.spec.compressRatio;
  const { ownM, ownU, prev, outU } = copySlots(o.m, o.u, o.ngram);
  const codes = o.ngram * o.m;
  const span = codes + o.u;
  if (kind !== "csa" || a.spec.indexer === undefined)
    fail(
      "the retrieving layers (the second V4 layer and the MTP layer) must be compressed_sparse_attention in layer_types.",
    );
  const x = a.spec.indexer as NonNullable<typeof a.spec.indexer>;
  if (nh < R) fail(`the retrieving layer needs a head per position of a row (${R}), it has ${nh}.`);
  if (oGroups !== 1) fail(`o_groups must be 1, got ${oGroups}.`);
  if (d - ropeDim < R * span)
    fail(`head_dim must hold ${R} × ${span} features (a row's positions' codes) beside the rotated ones.`);
  if (r < codes + 1) fail(`q_lora_rank must hold ${codes + 1} features (the match codes and a constant).`);
  if (or < o.u) fail(`o_lora_rank must hold ${o.u} features (an output code).`);
  if (x.numHeads < R) fail(`index_n_heads must be at least ${R}, got ${x.numHeads}.`);
  if (x.headDim - ropeDim < R * codes + 1)
    fail(`index_head_dim must hold ${R * codes + 1} features beside the rotated ones.`);
  const L = o.matchLogit;
  // Each key code's size: head g's query (unit RMS over d) times it, over √d, is L per agreeing token.
  const keyCode = L * Math.sqrt(o.ngram);
  const querySlot = (i: number) => {
    const s = Math.floor(i / o.m);
    return (s === 0 ? ownM : prev + (s - 1) * o.m) + (i % o.m);
  };
  const match = [...range(codes)];
  const groups = [...range(R)];
  const roles = v4AttentionRoles(a.names, a.spec, H);
  const latent = sparse(r, H, [...match.map((i) => [i, querySlot(i), 1] as const), [codes, one, 1]]);
  putRoles(c.put, roles.own, {
    qA: latent,
    // RMSNorm over the latent's n codes and constant: this weight gives them back unit size.
    qANorm: filled(r, Math.sqrt((o.ngram + 1) / r)),
    qB: sparse(
      nh * d,
      r,
      groups.flatMap((g) => match.map((i) => [g * d + g * span + i, i, 1] as const)),
    ),
    kv: new Float32Array(d * H),
    kvNorm: filled(d, 1),
    oA: sparse(
      or,
      nh * d,
      groups.flatMap((g) =>
        Array.from({ length: o.u }, (_, j) => [j, g * d + g * span + codes + j, 1] as const),
      ),
    ),
    oB: sparse(
      H,
      or,
      Array.from({ length: o.u }, (_, j) => [outU + j, j, 1] as const),
    ),
    // Half a token below a full match: a head without one adds next to nothing.
    sinks: filled(nh, (o.ngram - 0.5) * L),
  });
  // A row holds R × (ngram match codes and an output code); RMSNorm scales each by √(d / (R (ngram + 1))).
  const rowScale = Math.sqrt(d / (R * (o.ngram + 1)));
  putRoles(c.put, roles.compressor ?? fail("the csa layer declares no compressor."), {
    kv: sparse(
      2 * d,
      H,
      groups.flatMap((g) => [
        ...match.map((i) => [d + g * span + i, prev + i, 1] as const),
        ...Array.from({ length: o.u }, (_, j) => [d + g * span + codes + j, ownU + j, 1] as const),
      ]),
    ),
    gate: new Float32Array(2 * d * H),
    positionBias: blockPositionBias(R, d, (f) => (f < R * span ? Math.floor(f / span) : 0)),
    norm: Float32Array.from({ length: d }, (_, f) =>
      f < R * span ? (f % span < codes ? keyCode : 1) / rowScale : 1,
    ),
  });
  const indexer = roles.indexer ?? fail("the csa layer declares no indexer.");
  const di = x.headDim;
  putRoles(c.put, indexer.own, {
    qB: sparse(
      x.numHeads * di,
      r,
      groups.flatMap((g) => [
        ...match.map((i) => [g * di + g * codes + i, i, 1] as const),
        // Against the key's constant: only a full match scores above zero.
        [g * di + R * codes, codes, -(o.ngram - 0.5)] as const,
      ]),
    ),
    weights: sparse(
      x.numHeads,
      H,
      groups.map((g) => [g, one, 1] as const),
    ),
  });
  putRoles(c.put, indexer.compressor, {
    kv: sparse(2 * di, H, [
      ...groups.flatMap((g) => match.map((i) => [di + g * codes + i, prev + i, 1] as const)),
      [di + R * codes, one, 1],
    ]),
    gate: new Float32Array(2 * di * H),
    positionBias: blockPositionBias(R, di, (f) => (f < R * codes ? Math.floor(f / codes) : 0)),
    norm: filled(di, 1 / Math.sqrt(di / (R * o.ngram + 1))),
  });
}

/**
 * A compressor's position_bias [R, 2 × width] that gives feature f of a row only the position
 * group(f) of its own block: 0 there, SHUT at the block's other positions and throughout the
 * overlapping (previous block's) half.
 */
function blockPositionBias(R: number, width: number, group: (f: number) => number): Float32Array {
  const bias = new Float32Array(R * 2 * width).fill(SHUT);
  for (let f = 0; f < width; f++) bias[group(f) * 2 * width + width + f] = 0;
  return bias;
}

/**
 * The MTP layer as a one-token-further copy: its input at p is the main model's at p + 1 (see
 * placeV4CopyCircuit), its csa layer the main one's, its MoE silent, its mHC plain.
 */
function draftHead(mtp: V4Mtp, config: V4MtpConfig, c: CircuitContext, zero: (name: string) => void): void {
  const { options: o, hidden: H } = c;
  const one = H - 1;
  const { ownM, ownU, prev } = copySlots(o.m, o.u, o.ngram);
  const moves = [
    ...Array.from({ length: o.m }, (_, i) => [prev + i, ownM + i, 1] as const),
    ...Array.from({ length: (o.ngram - 1) * o.m }, (_, i) => [prev + o.m + i, prev + i, 1] as const),
    [one, one, 1] as const,
  ];
  putRoles(c.put, mtpHeadParameters(config), {
    eProj: sparse(H, H, [
      ...Array.from({ length: o.m }, (_, i) => [ownM + i, ownM + i, 1] as const),
      ...Array.from({ length: o.u }, (_, j) => [ownU + j, ownU + j, 1] as const),
    ]),
    hProj: sparse(H, H, moves),
    // The embedding row holds two codes and the constant; the main stream ngram + 3 codes and it.
    enorm: filled(H, Math.sqrt(3 / H)),
    hnorm: filled(H, Math.sqrt((o.ngram + 4) / H)),
    norm: filled(H, Math.sqrt((o.ngram + 4) / H)),
  });
  for (const [name, value] of mtp.residual.plainResidualTensors) c.put(name, value);
  for (const connection of [mtp.attentionConnection, mtp.moeConnection])
    for (const [name, value] of connection.plainResidualTensors) c.put(name, value);
  c.put(mtp.attentionConnection.normTensor, filled(H, Math.sqrt((o.ngram + 3) / H)));
  c.put(mtp.moeConnection.normTensor, filled(H, 1));
  for (const name of mtp.moe.outputTensors) zero(name);
  inductionHead(mtp.attention, c);
}
