import { BringupError } from "../../common/errors.js";
import { type AttentionSpec, GqaAttention } from "../blocks/attention/gqa-attention.js";
import type { Parameters } from "../blocks/parameters.js";
import type { HostTensor } from "../loader/host-tensor.js";
import type { LoadedModel } from "../model/loaded-model.js";
import type { TokenMixer } from "../model/model.js";
import { embeddingParameters } from "../models/decoder.js";
import {
  codeEmbedding,
  codeLmHead,
  copyOutputCode,
  copySlots,
  inductionQueryKey,
  tokenCodes,
} from "./copy-circuit.js";
import type { TinyModelFiles } from "./files.js";
import { filled, nearestRivalGap } from "./weights.js";

/** The circuit's sizes and logit margins. */
export interface CopyCircuitOptions {
  /** Features of each token's match code. */
  readonly m: number;
  /** Features of each token's output code. */
  readonly u: number;
  /** Tokens the induction head matches: the current one and ngram - 1 before it. */
  readonly ngram: number;
  /** Logits per matching token in the induction head. */
  readonly matchLogit: number;
  /** Logits between a previous-token head's pick and any other visible position. */
  readonly prevMargin: number;
  /** Scale of the LM head over the copied output code. */
  readonly outputLogit: number;
  /** Seed of the random codes (default 0). */
  readonly seed?: number;
}

/**
 * Rewrites the weights of `files` (any port's tiny model, `model` being the same files built) into
 * an exact-copy retrieval circuit, whatever else the architecture's layers hold, so the needle
 * gate can pass on the embedded engine:
 *
 * - the embedding writes each token's random match code m(t) and output code u(t) into their slots
 *   of the residual (copy-circuit.ts), the LM head reads the copied output code back;
 * - the first GQA attention layer becomes `ngram` previous-token heads: query and key from biases in
 *   the rotated features only, so head δ's score peaks exactly δ back (by at least prevMargin logits
 *   over every other visible distance: its window, or max_position_embeddings); each copies the
 *   match code δ back into its own slot;
 * - the second becomes one induction head over those slots: it attends to the token after the
 *   earlier occurrence of the current n-gram and copies that token's output code;
 * - every other block (MLPs, experts, recurrent mixers, extra heads) is silenced by zeroing its
 *   output projections, and every residual connection made ordinary (mHC's mixing logits zero).
 *
 * `hidden_size` must be copySlots(m, u, ngram).hidden and the two attention layers need q/k/v
 * biases, no q/k norms, at least `ngram` heads (the first) and room for the codes in their heads.
 */
export function placeCopyCircuit(
  files: TinyModelFiles,
  model: LoadedModel,
  options: CopyCircuitOptions,
): TinyModelFiles {
  return placeCircuit(files, model, options, {
    layerKind: "GQA attention",
    carries: (mixer) => mixer instanceof GqaAttention,
    constantFeature: false,
    construction: "copy circuit",
    previousTokenHeads: (mixer, c) =>
      previousTokenHeads(mixer as GqaAttention, c.maxPos, c.options, c.put, c.fail),
    inductionHead: (mixer, c) => inductionHead(mixer as GqaAttention, c.options, c.put, c.fail),
  });
}

/** How one attention form carries the circuit: which layers, and how their heads are written. */
export interface CircuitForm {
  /** What the two layers the circuit needs are, for errors ("GQA attention"). */
  readonly layerKind: string;
  readonly carries: (mixer: TokenMixer) => boolean;
  /** Whether the residual's last feature is 1 for every token, read where the layers lack biases. */
  readonly constantFeature: boolean;
  /** The `bringup_tiny.construction` stamp of the result. */
  readonly construction: string;
  previousTokenHeads(mixer: TokenMixer, context: CircuitContext): void;
  inductionHead(mixer: TokenMixer, context: CircuitContext): void;
}

/** What a form's head writers get: the model's sizes, the options, and the tensor writers. */
export interface CircuitContext {
  readonly hidden: number;
  /** Positions a previous-token head must tell apart (max_position_embeddings). */
  readonly maxPos: number;
  readonly options: CopyCircuitOptions;
  readonly put: Put;
  readonly fail: Fail;
}

/**
 * The circuit's placement shared by every attention form: the code embedding and LM head, the
 * norms that hand each layer the codes unscaled, plain residual connections, the first two layers
 * of `form` as previous-token and induction heads, and every other block silenced.
 */
export function placeCircuit(
  files: TinyModelFiles,
  model: LoadedModel,
  options: CopyCircuitOptions,
  form: CircuitForm,
): TinyModelFiles {
  const { m, u, ngram } = options;
  const slots = copySlots(m, u, ngram);
  const H = model.model.hiddenSize;
  const constant = form.constantFeature ? 1 : 0;
  const fail = (message: string): never => {
    throw new BringupError("RETRIEVAL_CONFIG_INVALID", `the retrieval variant's config: ${message}`);
  };
  if (H !== slots.hidden + constant)
    fail(
      `hidden_size must be ${slots.hidden + constant} (the circuit's slots${constant ? " and a constant feature" : ""}), got ${H}.`,
    );
  const { tensors, put, zero } = circuitTensors(files);

  const vocab = model.model.vocabSize;
  const codes = tokenCodes(options.seed ?? 0, vocab, m, u);
  const embedding = codeEmbedding(codes, H, slots.ownM, slots.ownU);
  if (constant) for (let t = 0; t < vocab; t++) embedding[t * H + H - 1] = 1;
  putRoles(put, embeddingParameters({ vocabSize: vocab, hiddenSize: H, tieWordEmbeddings: false }), {
    embedding,
    lmHead: codeLmHead(codes, H, slots.outU, options.outputLogit),
    // Every slot holds a unit code by the end (own_m, own_u, ngram previous, out_u), plus the constant.
    finalNorm: filled(H, Math.sqrt((3 + ngram + constant) / H)),
  });
  for (const [name, value] of model.model.residual.plainResidualTensors ?? []) put(name, value);

  const carriers = model.model.layers.flatMap((l, i) => (form.carries(l.mixer) ? [i] : []));
  if (carriers.length < 2)
    fail(`the circuit needs two ${form.layerKind} layers; the model has ${carriers.length}.`);
  const [previousLayer, inductionLayer] = carriers as [number, number];
  const context = { hidden: H, maxPos: model.config.maxPositionEmbeddings, options, put, fail };
  let filledSlots = 2;
  model.model.layers.forEach((layer, i) => {
    for (const connection of [layer.mixerConnection, layer.ffnConnection]) {
      for (const [name, value] of connection.plainResidualTensors ?? []) put(name, value);
    }
    // RMSNorm's output has norm sqrt(hidden); this weight hands attention the unit codes unscaled.
    put(layer.mixerConnection.normTensor, filled(H, Math.sqrt((filledSlots + constant) / H)));
    put(layer.ffnConnection.normTensor, filled(H, 1));
    for (const name of layer.ffn.outputTensors) zero(name);
    const mixer = layer.mixer;
    if (i === previousLayer) {
      form.previousTokenHeads(mixer, context);
      filledSlots += ngram;
    } else if (i === inductionLayer) {
      form.inductionHead(mixer, context);
    } else {
      for (const name of mixer.outputTensors) zero(name);
    }
  });
  return {
    ...files,
    config: {
      ...files.config,
      bringup_tiny: { ...(files.config.bringup_tiny as object), construction: form.construction },
    },
    tensors,
  };
}

export type Put = (name: string, data: Float32Array) => void;

/**
 * Writes into the parameter a block declares for a role; a role the block does not declare (under
 * its config) is refused by name.
 */
export function roleWriter<P extends Parameters>(
  put: Put,
  parameters: P,
): (role: keyof P & string, data: Float32Array) => void {
  return (role, data) => {
    const p = parameters[role];
    if (p === undefined) {
      throw new BringupError(
        "RETRIEVAL_CONFIG_INVALID",
        `the retrieval circuit writes the ${role} parameter, which this layer does not declare under its config.`,
        { subject: role },
      );
    }
    put(p.name, data);
  };
}

/** Writes each of `values` into the parameter its block declares for that role (see roleWriter). */
export function putRoles<P extends Parameters>(
  put: Put,
  parameters: P,
  values: { readonly [K in keyof P]?: Float32Array },
): void {
  const write = roleWriter(put, parameters);
  for (const [role, data] of Object.entries(values) as [keyof P & string, Float32Array | undefined][]) {
    if (data !== undefined) write(role, data);
  }
}

/**
 * A copy of `files`' tensors and how a circuit rewrites them: `put` replaces a tensor's values
 * (refusing one the model lacks or holds at another size), `zero` zeroes one.
 */
export function circuitTensors(files: TinyModelFiles): {
  readonly tensors: Map<string, HostTensor>;
  readonly put: Put;
  readonly zero: (name: string) => void;
} {
  const tensors = new Map<string, HostTensor>(files.tensors);
  const put = (name: string, data: Float32Array) => {
    const existing = tensors.get(name);
    if (existing === undefined || existing.data.length !== data.length) {
      throw new BringupError(
        "RETRIEVAL_CONFIG_INVALID",
        `the retrieval circuit writes ${data.length} values into ${name}, which the model ${existing === undefined ? "does not have" : `holds as [${existing.shape.join(", ")}]`}.`,
        { subject: name },
      );
    }
    tensors.set(name, { dtype: "F32", shape: existing.shape, data });
  };
  // Zeros in the tensor's own storage: MXFP4 blocks of zero bytes hold zeros too.
  const zero = (name: string) => {
    const existing = tensors.get(name);
    if (existing === undefined) return put(name, new Float32Array(0));
    const empty = new (existing.data.constructor as new (n: number) => HostTensor["data"])(
      existing.data.length,
    );
    tensors.set(name, { ...existing, data: empty });
  };
  return { tensors, put, zero };
}
export type Fail = (message: string) => never;

/** The rotated features of a head and their RoPE frequencies (HF's rotate-half pairs f, f + pairs). */
function rotary(spec: AttentionSpec): number[] {
  const dim = Math.round(spec.headDim * spec.partialRotaryFactor);
  return Array.from({ length: dim / 2 }, (_, f) => 1 / spec.ropeTheta ** ((2 * f) / dim));
}

function checkPlain(a: GqaAttention, which: string, fail: Fail): void {
  if (!a.spec.bias) fail(`the ${which} layer needs q/k/v biases (attention_bias: true).`);
  if (a.spec.qkNorm)
    fail(`the ${which} layer's q/k norms would rescale the circuit's queries; use a layer without them.`);
}

/** Heads δ = 1..ngram attend exactly δ back and copy that token's match code into prev_δ. */
function previousTokenHeads(
  a: GqaAttention,
  maxPos: number,
  o: CopyCircuitOptions,
  put: Put,
  fail: Fail,
): void {
  const { numHeads: nh, numKvHeads: nkv, headDim: hd, vHeadDim: vd } = a.spec;
  const H = copySlots(o.m, o.u, o.ngram).hidden;
  const { ownM, prev } = copySlots(o.m, o.u, o.ngram);
  checkPlain(a, "previous-token", fail);
  if (nh < o.ngram) fail(`the previous-token layer needs ${o.ngram} query heads, it has ${nh}.`);
  if (vd < o.m) fail(`the previous-token layer's value heads must hold ${o.m} features, they hold ${vd}.`);
  const invFreq = rotary(a.spec);
  const pairs = invFreq.length;
  if (pairs === 0) fail("the previous-token layer rotates no features, so it cannot tell positions apart.");
  const visible = a.spec.kind === "sliding" ? a.spec.window : maxPos;
  if (visible <= o.ngram)
    fail(`the previous-token layer must see ${o.ngram} tokens back, it sees ${visible - 1}.`);
  const amplitude = (o.prevMargin * Math.sqrt(hd)) / nearestRivalGap(invFreq, visible);
  const qBias = new Float32Array(nh * hd);
  const kBias = new Float32Array(nkv * hd);
  const v = new Float32Array(nkv * vd * H);
  const out = new Float32Array(H * nh * vd);
  for (let kv = 0; kv < nkv; kv++) {
    for (let f = 0; f < pairs; f++) kBias[kv * hd + f] = 1;
    for (let r = 0; r < o.m; r++) v[(kv * vd + r) * H + ownM + r] = 1 / (a.spec.valueScale ?? 1);
  }
  for (let h = 0; h < o.ngram; h++) {
    const offset = h + 1;
    for (const [f, w] of invFreq.entries()) {
      qBias[h * hd + f] = amplitude * Math.cos(-w * offset);
      qBias[h * hd + f + pairs] = amplitude * Math.sin(-w * offset);
    }
    for (let r = 0; r < o.m; r++) out[(prev + h * o.m + r) * nh * vd + h * vd + r] = 1;
  }
  putRoles(put, a.parameters(), {
    q: new Float32Array(nh * hd * H),
    k: new Float32Array(nkv * hd * H),
    v,
    o: out,
    qBias,
    kBias,
    vBias: new Float32Array(nkv * vd),
    // Sinks as high as the nearest rival take a negligible share.
    ...(a.spec.sinks ? { sinks: filled(nh, (amplitude * pairs) / Math.sqrt(hd) - o.prevMargin) } : {}),
  });
}

/** Head 0 matches the last ngram tokens' codes against earlier positions' and copies an output code. */
function inductionHead(a: GqaAttention, o: CopyCircuitOptions, put: Put, fail: Fail): void {
  const { numHeads: nh, numKvHeads: nkv, headDim: hd, vHeadDim: vd } = a.spec;
  const slots = copySlots(o.m, o.u, o.ngram);
  checkPlain(a, "induction", fail);
  const rotated = 2 * rotary(a.spec).length;
  if (hd - rotated < o.ngram * o.m)
    fail(`the induction layer's heads need ${o.ngram * o.m} unrotated features, they have ${hd - rotated}.`);
  if (vd < o.u) fail(`the induction layer's value heads must hold ${o.u} features, they hold ${vd}.`);
  const gain = Math.sqrt(o.matchLogit * Math.sqrt(hd));
  const { q } = inductionQueryKey(slots, nh * hd, rotated, gain);
  const { k } = inductionQueryKey(slots, nkv * hd, rotated, gain);
  const { v, o: out } = copyOutputCode(slots, nkv * vd, nh * vd);
  if (a.spec.valueScale !== undefined)
    for (let i = 0; i < v.length; i++) v[i] = (v[i] as number) / a.spec.valueScale;
  putRoles(put, a.parameters(), {
    q,
    k,
    v,
    o: out,
    qBias: new Float32Array(nh * hd),
    kBias: new Float32Array(nkv * hd),
    vBias: new Float32Array(nkv * vd),
    // A sink far below every score leaves the softmax to the matches.
    ...(a.spec.sinks ? { sinks: filled(nh, -1000) } : {}),
  });
}
