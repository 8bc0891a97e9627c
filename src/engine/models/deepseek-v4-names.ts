/**
 * DeepSeek-V4's released tensor names, read onto the family's (transformers') names. The released
 * deepseek-ai checkpoints keep DeepSeek's own names: `embed.weight`, `head.weight`, `norm.weight`,
 * `hc_head_{fn,base,scale}`, and per layer `layers.N.attn_norm` / `ffn_norm`, `hc_attn_*` /
 * `hc_ffn_*`, `attn.{wq_a,q_norm,wq_b,wkv,kv_norm,wo_a,wo_b,attn_sink}`, `attn.compressor.{wkv,
 * wgate,ape,norm}`, `attn.indexer.compressor.*`, `attn.indexer.{wq_b,weights_proj}`,
 * `ffn.gate.{weight,bias,tid2eid}`, `ffn.shared_experts.w{1,2,3}` and one tensor per routed expert
 * `ffn.experts.M.w{1,2,3}`; the MTP layer `mtp.0.*` the same under its own prefix, beside
 * `mtp.0.{e_proj,h_proj,enorm,hnorm,norm,hc_head_*}` (names the engine reads as they are).
 * Sources: huggingface/transformers `src/transformers/conversion_mapping.py` ("deepseek_v4": the
 * renames, w1 then w3 concatenated into `gate_up_proj` per expert, experts stacked in id order);
 * vllm-project/vllm `vllm/model_executor/models/deepseek_v4.py`
 * (`_make_deepseek_v4_weights_mapper`: `.scale` is a linear's
 * FP8 block scale, E8M0 in the FP4-expert release, and an expert's MXFP4 scale; its loader copies
 * the experts' packed FP4 bytes and E8M0 scale bytes unchanged into the MXFP4 layout gpt-oss
 * uses); a public remap write-up of the V4-Flash index (69,187 keys; experts `w1.weight` I8
 * [2048, 2048], `w1.scale` [2048, 128]).
 *
 * How they load (v4Checkpoint): the naming is told from the tensor names, not a flag; in
 * DeepSeek's, every name must be one of this table's for the config and none of transformers'
 * (a mixed or unknown name is refused naming it). Each routed expert's FP4 tensors (I8, two E2M1
 * values a byte, low nibble first) and E8M0 scales are stacked byte for byte into the MXFP4
 * `_blocks` / `_scales` the fused kernel reads (w1's rows, then w3's, as HF's gate_up_proj);
 * experts in a float dtype or FP8 are stacked likewise. FP8 linears stay FP8 with their block
 * scales (`.scale` read as `weight_scale_inv`, E8M0 decoded to its power of two) on the engine's
 * FP8 matmul; `wo_a`, which the attention reads in f32, is widened at load, exactly
 * (WeightSource.tensor). v4DeepseekTensors writes a checkpoint the other way, from the same table.
 */
import { BringupError, isBringupError } from "../../common/errors.js";
import { quadsToLanesInPlace } from "../../formats/fp8-quads.js";
import { encodeE8m0Exponent } from "../../formats/index.js";
import { v4AttentionNames } from "../blocks/attention/v4-attention.js";
import type { CompressorNames } from "../blocks/attention/v4-compressor.js";
import { swigluParameters } from "../blocks/mlp/swiglu-mlp.js";
import { v4MoeNames } from "../blocks/mlp/v4-moe.js";
import { mhcHeadParameters, mhcSiteParameters } from "../blocks/residual/mhc-connection.js";
import { type HostTensor, sharedHostArray, type TensorLookup } from "../loader/host-tensor.js";
import type { WeightSource } from "../loader/weight-source.js";
import { embeddingParameters, layerPrefix, mhcSites, preNormParameters } from "./decoder.js";
import { MTP_PREFIX, type V4MtpConfig, v4MtpHeadNames } from "./deepseek-v4-mtp.js";

/** What the name table reads of a DeepSeek-V4 config (models/deepseek-v4.ts V4Config). */
interface V4Config extends V4MtpConfig {
  readonly vocabSize: number;
  readonly tieWordEmbeddings: boolean;
  readonly layers: readonly V4LayerSpec[];
}
type V4LayerSpec = V4MtpConfig["mtp"];

/** One tensor in both namings; a linear's FP8 block scale follows it (`.scale` / `.weight_scale_inv`). */
interface NamePair {
  readonly family: string;
  readonly stored: string;
  readonly linear: boolean;
}

/** One layer's routed experts: the family's stack and DeepSeek's per-expert tensors of each part. */
interface ExpertStack {
  /** The family's stacked tensor (`<layer>.mlp.experts.gate_up_proj` / `down_proj`). */
  readonly family: string;
  /** `<stored layer>.ffn.experts`, before the expert id. */
  readonly stored: string;
  /** The parts stacked row-wise per expert, with their rows: w1 then w3, or w2. */
  readonly parts: readonly { readonly name: string; readonly rows: number }[];
  readonly cols: number;
  readonly experts: number;
}

/** The two namings of every tensor a config's checkpoint holds: one table, read both ways. */
interface V4NameTable {
  readonly pairs: readonly NamePair[];
  readonly stacks: readonly ExpertStack[];
}

/**
 * A linear's FP8 block scale: `<base>.scale` beside `<base>.weight` in DeepSeek's names,
 * `<base>.weight_scale_inv` in the family's.
 */
const STORED_SCALE = ".scale";
const FAMILY_SCALE = "_scale_inv";

/** The name table of `config` (main layers, MTP layer, head), built from the blocks' own names. */
export function v4NameTable(config: V4Config): V4NameTable {
  const pairs: NamePair[] = [];
  const stacks: ExpertStack[] = [];
  const H = config.hiddenSize;
  const add = (family: string, stored: string, linear = false) => {
    pairs.push({ family, stored, linear });
  };
  const embedding = embeddingParameters(config);
  add(embedding.embedding.name, "embed.weight", true);
  add(embedding.finalNorm.name, "norm.weight");
  if (embedding.lmHead) add(embedding.lmHead.name, "head.weight", true);
  const head = mhcHeadParameters(config.mhc, H);
  add(head.fn.name, "hc_head_fn");
  add(head.base.name, "hc_head_base");
  add(head.scale.name, "hc_head_scale");
  const layer = (p: string, n: string, spec: V4LayerSpec) => {
    const { inputNorm, postNorm } = preNormParameters(p, H);
    const sites = mhcSites(p);
    for (const [site, norm, stored] of [
      [sites.mixer, inputNorm.name, "attn"],
      [sites.ffn, postNorm.name, "ffn"],
    ] as const) {
      const q = mhcSiteParameters(site, norm, config.mhc, H);
      add(q.fn.name, `${n}.hc_${stored}_fn`);
      add(q.base.name, `${n}.hc_${stored}_base`);
      add(q.scale.name, `${n}.hc_${stored}_scale`);
    }
    add(inputNorm.name, `${n}.attn_norm.weight`);
    add(postNorm.name, `${n}.ffn_norm.weight`);
    const a = v4AttentionNames(p);
    const linear = (base: string, stored: string) => add(`${base}.weight`, `${n}.${stored}.weight`, true);
    linear(a.qA, "attn.wq_a");
    add(a.qANorm, `${n}.attn.q_norm.weight`);
    linear(a.qB, "attn.wq_b");
    linear(a.kv, "attn.wkv");
    add(a.kvNorm, `${n}.attn.kv_norm.weight`);
    linear(a.oA, "attn.wo_a");
    linear(a.oB, "attn.wo_b");
    add(a.sinks, `${n}.attn.attn_sink`);
    const compressor = (c: CompressorNames, stored: string) => {
      linear(c.kv, `${stored}.wkv`);
      linear(c.gate, `${stored}.wgate`);
      add(c.positionBias, `${n}.${stored}.ape`);
      add(c.norm, `${n}.${stored}.norm.weight`);
    };
    compressor(a.compressor, "attn.compressor");
    compressor(a.indexer.compressor, "attn.indexer.compressor");
    linear(a.indexer.qB, "attn.indexer.wq_b");
    linear(a.indexer.weights, "attn.indexer.weights_proj");
    const m = v4MoeNames(p);
    linear(m.router, "ffn.gate");
    add(m.bias, `${n}.ffn.gate.bias`);
    add(m.table, `${n}.ffn.gate.tid2eid`);
    const I = spec.moe.intermediateSize;
    const shared = swigluParameters(m.shared, H, I);
    add(shared.gate.name, `${n}.ffn.shared_experts.w1.weight`, true);
    add(shared.up.name, `${n}.ffn.shared_experts.w3.weight`, true);
    add(shared.down.name, `${n}.ffn.shared_experts.w2.weight`, true);
    const experts = { stored: `${n}.ffn.experts`, experts: spec.moe.numExperts };
    stacks.push({
      family: m.gateUp,
      ...experts,
      cols: H,
      parts: [
        { name: "w1", rows: I },
        { name: "w3", rows: I },
      ],
    });
    stacks.push({ family: m.down, ...experts, cols: I, parts: [{ name: "w2", rows: H }] });
  };
  for (const [i, spec] of config.layers.entries()) layer(layerPrefix(i), `layers.${i}`, spec);
  for (const { name, linear } of v4MtpHeadNames(config)) add(name, name, linear);
  layer(MTP_PREFIX, MTP_PREFIX, config.mtp);
  return { pairs, stacks };
}

/** The tensor names the table reads each way, and DeepSeek's per-expert names. */
class NameIndex {
  readonly toStored = new Map<string, string>();
  readonly toFamily = new Map<string, string>();
  /** Each stack by the stored prefix of its experts (`layers.N.ffn.experts`) and part name. */
  private readonly stackByPart = new Map<string, ExpertStack>();

  constructor(readonly table: V4NameTable) {
    for (const { family, stored, linear } of table.pairs) {
      this.toStored.set(family, stored);
      this.toFamily.set(stored, family);
      if (linear) {
        this.toStored.set(`${family}${FAMILY_SCALE}`, stored.replace(/\.weight$/, STORED_SCALE));
        this.toFamily.set(stored.replace(/\.weight$/, STORED_SCALE), `${family}${FAMILY_SCALE}`);
      }
    }
    for (const s of table.stacks)
      for (const part of s.parts) this.stackByPart.set(`${s.stored}/${part.name}`, s);
  }

  /** The stack a stored per-expert name belongs to, when its expert id is one of the config's. */
  expertStack(stored: string): ExpertStack | undefined {
    const m = /^(.*)\.(\d+)\.(w[123])\.(weight|scale)$/.exec(stored);
    if (m === null) return undefined;
    const s = this.stackByPart.get(`${m[1]}/${m[3]}`);
    return s !== undefined && Number(m[2]) < s.experts ? s : undefined;
  }

  /** Whether `name` is DeepSeek's (and not also the family's, as the MTP head's names are). */
  storedOnly(name: string): boolean {
    return (this.toFamily.has(name) && !this.toStored.has(name)) || /\.experts\.\d+\.w[123]\./.test(name);
  }
}

/** Which naming a checkpoint's `names` use; mixed and unknown names are refused naming one. */
export function v4Naming(
  names: readonly string[],
  config: V4Config,
  source: string,
): "transformers" | "deepseek" {
  return naming(names, new NameIndex(v4NameTable(config)), config, source);
}

function naming(
  names: readonly string[],
  index: NameIndex,
  config: V4Config,
  source: string,
): "transformers" | "deepseek" {
  const deepseek = names.find((n) => index.storedOnly(n));
  if (deepseek === undefined) return "transformers";
  for (const n of names) {
    if (index.toFamily.has(n) || index.expertStack(n) !== undefined) continue;
    const family = index.toStored.has(n) || n.startsWith("model.") || n.startsWith("lm_head.");
    throw new BringupError(
      "MODEL_WEIGHTS_MISMATCH",
      family
        ? `${source}: tensor ${n} is in transformers' naming but ${deepseek} is in DeepSeek's; a checkpoint uses one naming throughout${index.toStored.has(n) ? ` (DeepSeek's name for it is ${index.toStored.get(n)})` : ""}.`
        : `${source}: tensor ${n} is not a DeepSeek-V4 tensor of this config.json (${config.layers.length} layers layers.0-${config.layers.length - 1}, experts 0-${(config.layers[0]?.moe.numExperts ?? 1) - 1}, MTP mtp.0); the checkpoint and config.json do not match.`,
      { subject: n },
    );
  }
  return "deepseek";
}

/**
 * The checkpoint `w` as the V4 family reads it: `w` itself in transformers' names, else a view of
 * DeepSeek's names under the family's, the experts stacked (each stack built once, on first read).
 * A stored expert missing or of another shape than the config's is refused naming it.
 */
function v4Checkpoint(
  w: WeightSource,
  config: V4Config,
  index = new NameIndex(v4NameTable(config)),
): WeightSource {
  if (naming(w.names, index, config, w.source) === "transformers") return w;
  const stacks = new Map<string, HostTensor | undefined>();
  const familyNames = new Set<string>();
  for (const n of w.names) {
    const stack = index.expertStack(n);
    familyNames.add(stack === undefined ? (index.toFamily.get(n) as string) : stack.family);
  }
  return w.view(
    (name, read) => {
      const stored = index.toStored.get(name);
      if (stored !== undefined) return read(stored);
      if (!stacks.has(name)) stacks.set(name, stackedTensor(name, index.table.stacks, read, w.source));
      return stacks.get(name);
    },
    [...familyNames],
  );
}

/** What the family's stacked names read: `<stack>_blocks` / `_scales` (MXFP4), `<stack>`, `<stack>_scale_inv`. */
function stackedTensor(
  name: string,
  stacks: readonly ExpertStack[],
  read: TensorLookup,
  source: string,
): HostTensor | undefined {
  for (const s of stacks) {
    if (!name.startsWith(s.family)) continue;
    const form = name.slice(s.family.length);
    const first = read(`${s.stored}.0.${s.parts[0]?.name}.weight`);
    // Without expert 0 the stack is refused naming it when the family asks for the plain form.
    if (first === undefined) return form === "" ? stack(s, "weight", false, read, source) : undefined;
    const fp4 = first.dtype === "I8";
    const scale = form === (fp4 ? "_scales" : FAMILY_SCALE);
    if (form !== (fp4 ? "_blocks" : "") && !scale) return undefined;
    return stack(s, scale ? "scale" : "weight", fp4, read, source);
  }
  return undefined;
}

/** One layer's experts' `kind` tensors stacked [experts, rows of every part, cols] byte for byte. */
function stack(
  s: ExpertStack,
  kind: "weight" | "scale",
  fp4: boolean,
  read: TensorLookup,
  source: string,
): HostTensor {
  const tensors = Array.from({ length: s.experts }, (_, e) =>
    s.parts.map((part) => {
      const name = `${s.stored}.${e}.${part.name}.${kind}`;
      const t = read(name);
      if (t === undefined)
        throw new BringupError(
          "MODEL_WEIGHT_MISSING",
          `${source}: tensor ${name} is missing; config.json's n_routed_experts is ${s.experts}, so every layer has experts 0-${s.experts - 1} with w1, w2 and w3.`,
          { subject: name },
        );
      // FP4 packs two values a byte and scales each 32; another dtype's weight is [rows, cols], and
      // its scale grid is expert 0's (the stacked grid is checked as the family reads it).
      const reference = fp4
        ? [part.rows, kind === "weight" ? s.cols / 2 : s.cols / 32]
        : kind === "weight"
          ? [part.rows, s.cols]
          : (read(`${s.stored}.0.${part.name}.scale`) as HostTensor).shape;
      if (t.shape.length !== 2 || t.shape[0] !== reference[0] || t.shape[1] !== reference[1])
        throw new BringupError(
          "MODEL_WEIGHTS_MISMATCH",
          `${source}: ${name} has shape [${t.shape.join(", ")}] but config.json implies [${reference.join(", ")}]${fp4 ? " (FP4 packs two values a byte, one E8M0 scale per 32)" : ""}.`,
          { subject: name },
        );
      return { name, t };
    }),
  );
  const firstPart = (tensors[0] as { name: string; t: HostTensor }[])[0] as { name: string; t: HostTensor };
  const dtype = firstPart.t.dtype;
  const rows = tensors[0]?.reduce((sum, { t }) => sum + (t.shape[0] as number), 0) as number;
  const cols = firstPart.t.shape[1] as number;
  const bytes = tensors.flat().reduce((sum, { t }) => sum + t.data.byteLength, 0);
  const out = sharedHostArray(fp4 ? "U8" : dtype, bytes);
  // Parts in quads order stack as they are while all are (each holds whole groups of four rows);
  // among parts of mixed orders, each goes in lanes order.
  const orders = new Set(tensors.flat().map(({ t }) => t.fp8Order));
  const mixed = orders.size > 1;
  let at = 0;
  for (const { name, t } of tensors.flat()) {
    if (t.dtype !== dtype)
      throw new BringupError(
        "MODEL_WEIGHT_DTYPE",
        `${source}: ${name} is ${t.dtype} but ${firstPart.name} is ${dtype}; one layer's experts are stored in one dtype.`,
        { subject: name },
      );
    out.bytes.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), at);
    if (mixed && t.fp8Order === "quads")
      quadsToLanesInPlace(out.bytes.subarray(at, at + t.data.byteLength), t.shape.at(-1) as number);
    at += t.data.byteLength;
  }
  const shape = fp4 && kind === "weight" ? [s.experts, rows, cols / 16, 16] : [s.experts, rows, cols];
  // Whole rows byte for byte: FP8 codes the loader re-laid (each part alike) stay in their order.
  const stacked = mixed ? "lanes" : firstPart.t.fp8Order;
  const order = stacked === undefined ? {} : { fp8Order: stacked };
  return { dtype: fp4 ? "U8" : dtype, shape, data: out.data, ...order };
}

/**
 * `tensors`, a checkpoint in the family's names (a tiny model's), in DeepSeek's by the same table:
 * stacked experts split per expert (MXFP4 into I8 blocks and E8M0 scales), FP8 block scales under
 * `.scale`, E8M0 when `scales` says so (refused naming a scale that is not a power of two).
 */
export function v4DeepseekTensors(
  tensors: ReadonlyMap<string, HostTensor>,
  config: V4Config,
  scales: "f32" | "e8m0" = "f32",
): Map<string, HostTensor> {
  const index = new NameIndex(v4NameTable(config));
  const out = new Map<string, HostTensor>();
  for (const [name, t] of tensors) {
    const stored = index.toStored.get(name);
    if (stored !== undefined) {
      out.set(stored, name.endsWith(FAMILY_SCALE) && scales === "e8m0" ? e8m0Scales(t, name) : t);
      continue;
    }
    const s = index.table.stacks.find((st) => name.startsWith(st.family));
    const form = s === undefined ? undefined : name.slice(s.family.length);
    if (s === undefined || !["", "_blocks", "_scales", FAMILY_SCALE].includes(form as string))
      throw new BringupError(
        "MODEL_WEIGHTS_MISMATCH",
        `${name} has no DeepSeek-V4 name for this config.json; only the family's declared tensors can be renamed.`,
        { subject: name },
      );
    for (const [part, piece] of splitExperts(t, s, name)) {
      const scale = form === "_scales" || form === FAMILY_SCALE;
      const stored = `${part}.${scale ? "scale" : "weight"}`;
      if (form === "_blocks") out.set(stored, { ...piece, dtype: "I8" });
      else if (form === "_scales") out.set(stored, { ...piece, dtype: "F8_E8M0" });
      else out.set(stored, scale && scales === "e8m0" ? e8m0Scales(piece, name) : piece);
    }
  }
  return out;
}

/**
 * A stacked tensor [experts, rows, ...] as each expert's parts (`<stored>.M.w1`, ...), each part
 * its share of the rows (a scale grid's too), the rest flattened: [part rows, row elements].
 */
function splitExperts(t: HostTensor, s: ExpertStack, name: string): [string, HostTensor][] {
  const rows = t.shape[1] as number;
  const total = s.parts.reduce((a, p) => a + p.rows, 0);
  const rowLength = t.shape.slice(2).reduce((a, b) => a * b, 1);
  // Codes in quads order split as they are where every part holds whole groups of four rows;
  // otherwise (a copy) in lanes order.
  const regroup = t.fp8Order === "quads" && s.parts.some((p) => ((rows * p.rows) / total) % 4 !== 0);
  const held = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  const bytes = regroup ? quadsToLanesInPlace(held.slice(), rowLength) : held;
  const rowBytes = bytes.byteLength / s.experts / rows;
  const out: [string, HostTensor][] = [];
  // Whole rows byte for byte: FP8 codes in lanes (or quads) order stay so.
  const kept = regroup ? "lanes" : t.fp8Order;
  const order = kept === undefined ? {} : { fp8Order: kept };
  let at = 0;
  for (let e = 0; e < s.experts; e++)
    for (const part of s.parts) {
      const partRows = (rows * part.rows) / total;
      if (!Number.isInteger(partRows) || t.shape[0] !== s.experts)
        throw new BringupError(
          "MODEL_WEIGHTS_MISMATCH",
          `${name} has shape [${t.shape.join(", ")}], which does not split into ${s.experts} experts' ${s.parts.map((p) => p.name).join(" and ")}; write its scale blocks within each part.`,
          { subject: name },
        );
      const copy = sharedHostArray(t.dtype, rowBytes * partRows);
      copy.bytes.set(bytes.subarray(at, at + rowBytes * partRows));
      at += rowBytes * partRows;
      out.push([
        `${s.stored}.${e}.${part.name}`,
        { dtype: t.dtype, shape: [partRows, rowLength], data: copy.data, ...order },
      ]);
    }
  return out;
}

/** An FP8 block-scale tensor as E8M0 codes, each an exact power of two. */
function e8m0Scales(t: HostTensor, name: string): HostTensor {
  const values = t.data as Float32Array;
  const codes = new Uint8Array(values.length);
  values.forEach((v, i) => {
    const exponent = Math.log2(v);
    if (t.dtype !== "F32" || !Number.isInteger(exponent))
      throw new BringupError(
        "MODEL_WEIGHTS_INVALID",
        `${name} holds ${v} at index ${i}, which E8M0 cannot store (a power of two is needed); write its scales as F32.`,
        { subject: name },
      );
    codes[i] = encodeE8m0Exponent(exponent);
  });
  return { dtype: "F8_E8M0", shape: t.shape, data: codes };
}

/**
 * `build` over the checkpoint `w` as the family reads it (v4Checkpoint); an error about a tensor
 * the family asked for by its own name names the tensor as DeepSeek's checkpoint stores it.
 */
export function readV4Checkpoint<T>(w: WeightSource, config: V4Config, build: (w: WeightSource) => T): T {
  const index = new NameIndex(v4NameTable(config));
  const checkpoint = v4Checkpoint(w, config, index);
  if (checkpoint === w) return build(w);
  const { toStored } = index;
  try {
    return build(checkpoint);
  } catch (e) {
    const stored = isBringupError(e) && e.subject !== undefined ? toStored.get(e.subject) : undefined;
    if (!isBringupError(e) || e.subject === undefined || stored === undefined) throw e;
    throw new BringupError(e.code, e.message.replaceAll(e.subject, stored), { subject: stored, cause: e });
  }
}
