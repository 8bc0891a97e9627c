import { RelativeBiasAttention } from "../blocks/attention/relative-bias-attention.js";
import { relativeBucketTable } from "../blocks/attention/relative-position-buckets.js";
import type { LoadedModel } from "../model/loaded-model.js";
import { copyOutputCode, copySlots, inductionQueryKey } from "./copy-circuit.js";
import { type CopyCircuitOptions, type Fail, type Put, placeCircuit } from "./copy-circuit-placement.js";
import type { TinyModelFiles } from "./files.js";
import { filled } from "./weights.js";

/**
 * The copy circuit (see copy-circuit-placement.ts) placed into a model whose attention has no
 * rotary embedding but a learned logit per head and relative-distance bucket
 * (blocks/attention/relative-bias-attention.ts):
 *
 * - the first such layer's heads δ = 1..ngram have zero queries and keys, so their scores are the
 *   bias alone: 0 for the bucket of distance δ and −prevMargin for every other bucket, so head δ
 *   attends exactly δ back (distances below numBuckets/2 have a bucket each) at any context length;
 *   its value copies the token's match code into slot prev_δ;
 * - the second layer's head 0 compares the current n-gram's codes with the codes before each
 *   earlier position, with a zero bias table (position plays no part), and copies the output code;
 * - both layers' key and value convolutions pass the current input through (the newest tap 1, the
 *   others 0), and everything else is silenced.
 */
export function placeRelativeCopyCircuit(
  files: TinyModelFiles,
  model: LoadedModel,
  options: CopyCircuitOptions,
): TinyModelFiles {
  return placeCircuit(files, model, options, {
    layerKind: "relative-bias attention",
    carries: (mixer) => mixer instanceof RelativeBiasAttention,
    constantFeature: false,
    construction: "relative-bias copy circuit",
    previousTokenHeads: (mixer, c) =>
      previousTokenHeads(mixer as RelativeBiasAttention, c.options, c.put, c.fail),
    inductionHead: (mixer, c) => inductionHead(mixer as RelativeBiasAttention, c.options, c.put, c.fail),
  });
}

/** Convolutions that pass each input through unchanged. */
function passThroughConvs(a: RelativeBiasAttention, put: Put): void {
  const { numKvHeads, headDim, convKernel: K } = a.spec;
  const conv = new Float32Array(numKvHeads * headDim * K);
  for (let c = 0; c < numKvHeads * headDim; c++) conv[c * K + K - 1] = 1;
  put(a.names.kConv, conv);
  put(a.names.vConv, conv);
}

function previousTokenHeads(a: RelativeBiasAttention, o: CopyCircuitOptions, put: Put, fail: Fail): void {
  const { numHeads: nh, numKvHeads: nkv, headDim: hd, numBuckets: nb, maxDistance } = a.spec;
  const { hidden: H, ownM, prev } = copySlots(o.m, o.u, o.ngram);
  if (nh < o.ngram) fail(`the previous-token layer needs ${o.ngram} query heads, it has ${nh}.`);
  if (hd < o.m) fail(`the previous-token layer's heads must hold ${o.m} features, they hold ${hd}.`);
  if (Math.floor(nb / 2) <= o.ngram)
    fail(
      `relative_attention_num_buckets must exceed ${2 * o.ngram} so distances 1..${o.ngram} have a bucket each, got ${nb}.`,
    );
  const buckets = relativeBucketTable(nb, maxDistance);
  const bias = new Float32Array(nb * nh).fill(-o.prevMargin);
  for (let h = 0; h < o.ngram; h++) bias[(buckets[h + 1] as number) * nh + h] = 0;
  const v = new Float32Array(nkv * hd * H);
  const out = new Float32Array(H * nh * hd);
  for (let kv = 0; kv < nkv; kv++) for (let r = 0; r < o.m; r++) v[(kv * hd + r) * H + ownM + r] = 1;
  for (let h = 0; h < o.ngram; h++)
    for (let r = 0; r < o.m; r++) out[(prev + h * o.m + r) * nh * hd + h * hd + r] = 1;
  const n = a.names;
  put(`${n.q}.weight`, new Float32Array(nh * hd * H));
  put(`${n.k}.weight`, new Float32Array(nkv * hd * H));
  put(`${n.v}.weight`, v);
  put(`${n.o}.weight`, out);
  put(n.bias, bias);
  passThroughConvs(a, put);
}

function inductionHead(a: RelativeBiasAttention, o: CopyCircuitOptions, put: Put, fail: Fail): void {
  const { numHeads: nh, numKvHeads: nkv, headDim: hd, numBuckets: nb } = a.spec;
  const slots = copySlots(o.m, o.u, o.ngram);
  if (hd < o.ngram * o.m)
    fail(`the induction layer's heads need ${o.ngram * o.m} features, they have ${hd}.`);
  if (hd < o.u) fail(`the induction layer's heads must hold ${o.u} output features, they hold ${hd}.`);
  const gain = Math.sqrt(o.matchLogit * Math.sqrt(hd));
  const { q } = inductionQueryKey(slots, nh * hd, 0, gain);
  const { k } = inductionQueryKey(slots, nkv * hd, 0, gain);
  const { v, o: out } = copyOutputCode(slots, nkv * hd, nh * hd);
  const n = a.names;
  put(`${n.q}.weight`, q);
  put(`${n.k}.weight`, k);
  put(`${n.v}.weight`, v);
  put(`${n.o}.weight`, out);
  put(n.bias, filled(nb * nh, 0));
  passThroughConvs(a, put);
}
