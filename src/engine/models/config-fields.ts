import { z } from "zod";
import { BringupError } from "../../common/errors.js";
import type { YarnScaling } from "../kernels/rope.js";

/** Throws MODEL_CONFIG_INVALID naming the config.json field to fix. */
export type Fail = (field: string, message: string) => never;

export const positive = z.number().int().positive();
export const nonNegative = z.number().int().nonnegative();
/** `bos_token_id` / `eos_token_id`: one id or a list of ids. */
export const tokenIds = z.union([nonNegative, z.array(nonNegative)]);

/** The token-id fields every family reads the same way. */
export const TOKEN_ID_FIELDS = { bos_token_id: nonNegative.nullish(), eos_token_id: tokenIds.nullish() };

/**
 * Parses `json` (a config.json object read from `source`) with a family's `schema`: the fields it
 * reads, its defaults and their checks. The first failing field is MODEL_CONFIG_INVALID naming
 * `source`, the field and the `family` whose config.json is read; `fail` raises the same error for
 * the family's own cross-field checks.
 */
export function parseConfigFields<S extends z.ZodType>(
  schema: S,
  json: unknown,
  source: string,
  family: string,
): { readonly fields: z.infer<S>; readonly fail: Fail } {
  const fail: Fail = (field, message) => {
    throw new BringupError("MODEL_CONFIG_INVALID", `${source}: ${field}: ${message}`, { subject: source });
  };
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    fail(
      issue?.path.join(".") || "(root)",
      `${issue?.message ?? "invalid"}; fix this field (a ${family} config.json is read).`,
    );
  }
  return { fields: parsed.data as z.infer<S>, fail };
}

/** The ModelConfig token fields of parsed `bos_token_id` / `eos_token_id`. */
export function tokenIdConfig(c: {
  readonly bos_token_id?: number | null;
  readonly eos_token_id?: number | readonly number[] | null;
}): { readonly bosTokenId?: number; readonly eosTokenIds: readonly number[] } {
  const eos = c.eos_token_id;
  return {
    ...(c.bos_token_id != null ? { bosTokenId: c.bos_token_id } : {}),
    eosTokenIds: eos == null ? [] : typeof eos === "number" ? [eos] : [...eos],
  };
}

/** One public spelling of RoPE parameters: HF's `rope_scaling`, or transformers v5's `rope_parameters`. */
const ropeParametersField = z
  .looseObject({
    rope_type: z.string().optional(),
    type: z.string().optional(),
    rope_theta: z.number().positive().optional(),
    factor: z.number().positive().optional(),
    original_max_position_embeddings: positive.optional(),
    beta_fast: z.number().optional(),
    beta_slow: z.number().optional(),
    mscale: z.number().optional(),
    mscale_all_dim: z.number().optional(),
    // HF YaRN's rounding of the correction range: true (the default) rounds it, gpt-oss sets false.
    truncate: z.boolean().optional(),
    // HF YaRN's explicit cos/sin factor, in place of the one mscale / mscale_all_dim give.
    attention_factor: z.number().positive().optional(),
    // transformers v5 keeps the rotated fraction of each head here (rope_parameters).
    partial_rotary_factor: z.number().gt(0).lte(1).optional(),
  })
  .nullish();

/** The keys of a RoPE object the engine reads; ropeConfig refuses any other by name. */
const ROPE_KEYS: readonly string[] = Object.keys(ropeParametersField.unwrap().unwrap().shape);

/**
 * The RoPE fields of a single-θ config.json in every public spelling: `rope_theta` at the top
 * (DeepSeek-V3, Kimi K2, Llama), `rope_parameters: {rope_theta, rope_type, ...}` (transformers v5;
 * the public GLM-5.x configs have no top-level `rope_theta`), and `rope_scaling` (HF's YaRN, as
 * DeepSeek-V3 and gpt-oss spell it). Read them with `ropeConfig`.
 */
export const ROPE_FIELDS = {
  rope_theta: z.number().positive().optional(),
  rope_parameters: ropeParametersField,
  rope_scaling: ropeParametersField,
};

/** What `ropeConfig` reads from ROPE_FIELDS. */
export interface RopeFields {
  readonly rope_theta?: number | undefined;
  readonly rope_parameters?: z.infer<typeof ropeParametersField>;
  readonly rope_scaling?: z.infer<typeof ropeParametersField>;
}

/**
 * The RoPE base and YaRN scaling of `c`, whichever public spelling it uses. θ is
 * `rope_parameters.rope_theta`, else `rope_theta`, else `defaultTheta`: as transformers v5 reads
 * them, `rope_parameters` wins, since GLM-5.x configs may keep an inherited top-level default. A scaling type other than "default" (in `rope_scaling` or `rope_parameters`) is read
 * when it is YaRN and the family applies it (`yarn` true, `maxPositions` the fallback original
 * context), and otherwise refused naming the field, never silently dropped; so is a key of either
 * object the engine does not read (`rope_parameters.partial_rotary_factor`, say).
 */
export function ropeConfig(
  c: RopeFields,
  fail: Fail,
  options: {
    readonly defaultTheta: number;
    readonly yarn?: { readonly maxPositions: number };
    /** The family's top-level partial_rotary_factor, where it rotates part of each head. */
    readonly partialRotaryFactor?: number;
  },
): { readonly theta: number; readonly yarn?: YarnScaling; readonly partialRotaryFactor: number } {
  const theta = c.rope_parameters?.rope_theta ?? c.rope_theta ?? options.defaultTheta;
  const partialRotaryFactor = rotatedFraction(c, fail, options.partialRotaryFactor);
  const scalings = (["rope_scaling", "rope_parameters"] as const).flatMap((field) => {
    const s = c[field];
    const kind = s?.rope_type ?? s?.type ?? "default";
    return s == null || kind === "default" ? [] : [{ field, s, kind }];
  });
  if (scalings.length > 1)
    fail("rope_scaling", "both rope_scaling and rope_parameters scale RoPE; keep one of them.");
  const scaling = scalings[0];
  const yarnOptions = scaling?.kind === "yarn" ? options.yarn : undefined;
  if (scaling !== undefined && yarnOptions === undefined)
    fail(
      scaling.field,
      `RoPE scaling "${scaling.kind}" is not applied by this family in the reference engine${scaling.kind === "yarn" ? " yet" : " (it reads default or yarn)"}; a checkpoint needing it cannot be computed faithfully.`,
    );
  for (const field of ["rope_scaling", "rope_parameters"] as const) {
    const unknown = Object.keys(c[field] ?? {}).find((key) => !ROPE_KEYS.includes(key));
    if (unknown !== undefined)
      fail(
        `${field}.${unknown}`,
        `is not a RoPE parameter the engine reads (it reads ${ROPE_KEYS.join(", ")}); a checkpoint needing it cannot be computed faithfully.`,
      );
  }
  if (scaling === undefined || yarnOptions === undefined) return { theta, partialRotaryFactor };
  const { field, s } = scaling;
  // YaRN's factor is the config's, as transformers v5 and vLLM read it; transformers 4.4x-4.5x
  // replaced it by max_position_embeddings / original_max_position_embeddings where both are
  // given. Every public fixture's YaRN has the two equal (models/public-configs.test.ts).
  return {
    theta,
    partialRotaryFactor,
    yarn: {
      factor: s.factor ?? fail(`${field}.factor`, "is required for yarn; set it."),
      originalMaxPositionEmbeddings: s.original_max_position_embeddings ?? yarnOptions.maxPositions,
      betaFast: s.beta_fast ?? 32,
      betaSlow: s.beta_slow ?? 1,
      ...(s.mscale === undefined ? {} : { mscale: s.mscale }),
      ...(s.mscale_all_dim === undefined ? {} : { mscaleAllDim: s.mscale_all_dim }),
      ...(s.truncate === undefined ? {} : { truncate: s.truncate }),
      ...(s.attention_factor === undefined ? {} : { attentionFactor: s.attention_factor }),
    },
  };
}

/**
 * The rotated fraction of each head: `rope_parameters.partial_rotary_factor` (transformers v5's
 * spelling) over the family's top-level `topLevel` (1 when the family rotates whole heads or the
 * config gives neither), as rope_parameters wins for θ. A fraction below 1 for a family that
 * rotates whole heads (`topLevel` undefined), or two different explicit fractions, are refused.
 */
function rotatedFraction(c: RopeFields, fail: Fail, topLevel: number | undefined): number {
  const nested = c.rope_parameters?.partial_rotary_factor;
  if (nested === undefined) return topLevel ?? 1;
  if (topLevel === undefined && nested !== 1)
    fail(
      "rope_parameters.partial_rotary_factor",
      `${nested}: this family rotates whole heads; a checkpoint rotating part of each cannot be computed faithfully.`,
    );
  if (topLevel !== undefined && topLevel !== 1 && topLevel !== nested)
    fail(
      "rope_parameters.partial_rotary_factor",
      `${nested} differs from partial_rotary_factor ${topLevel}; keep one of them.`,
    );
  return nested;
}

/**
 * Fields of a public config.json that a family does not read because they do not change what the
 * model computes, each with the reason (training-only settings, serving hints, metadata, values
 * the family derives from other fields). Every other field is read by the family's schema.
 */
export type UnreadFields = Readonly<Record<string, string>>;

/** Fields every family leaves unread, with the reason: metadata, training and serving settings. */
export const COMMON_UNREAD_FIELDS: UnreadFields = {
  architectures: "the HF class name; registry.ts picks the family from it and model_type.",
  auto_map: "transformers' remote-code class paths; the engine runs its own model code.",
  transformers_version: "metadata: the transformers release that wrote the file.",
  torch_dtype: "the stored dtype; the loader reads each tensor's dtype from the checkpoint.",
  dtype: "transformers v5's torch_dtype; the loader reads each tensor's dtype from the checkpoint.",
  use_cache: "a transformers generation switch; the engine always keeps its cache.",
  initializer_range: "training only: the std of freshly initialised weights.",
  attention_dropout: "training only: dropout is off at inference.",
  pad_token_id: "padding of batched training inputs; the engine does not pad.",
  pretraining_tp: "training only: tensor parallelism used in pre-training.",
  output_router_logits: "training only: returns router logits for the auxiliary loss.",
  router_aux_loss_coef: "training only: the weight of the load-balancing loss.",
  aux_loss_alpha: "training only: the weight of the load-balancing loss.",
  seq_aux: "training only: the sequence-level auxiliary loss.",
  ep_size: "a serving hint (expert parallelism); it does not change the result.",
  mxfp4_layout:
    "the MXFP4 code order of a checkpoint `bringup weights convert --layout halves` re-laid out; the loader reads it (load-model.ts), not the family.",
};

/**
 * Keys of a public config's `quantization_config` and why the engine's model code does not read
 * them: the loader reads each tensor's format, dtype and scale grid from the checkpoint itself, and
 * the reference computes activations unquantized. A family that reads a key lists it itself (the
 * DeepSeek-V3 layout reads `scale_fmt` for its FP8 indexer); models/public-configs.test.ts fails on
 * a fixture's key that neither classifies.
 */
export const QUANTIZATION_UNREAD_KEYS: UnreadFields = {
  quant_method:
    "the weights' format; the loader reads it from the tensors (F8_E4M3 with scales, _blocks/_scales).",
  fmt: "the FP8 element format; the loader reads it from each tensor's dtype.",
  activation_scheme:
    "how a device quantizes activations (dynamic: per token at run time); the reference computes them unquantized.",
  weight_block_size:
    "the FP8 scale grid; the loader takes it from each weight_scale_inv tensor's shape beside its matrix.",
  modules_to_not_convert: "which modules stay unquantized; the loader reads each tensor's dtype.",
  ignored_layers: "which layers stay unquantized; the loader reads each tensor's dtype.",
  mxfp4_block_size: "MXFP4's block of 32 values, fixed by the format the loader decodes.",
  store_dtype: "the experts' stored format (MiMo's mxfp4); the loader reads it from the tensors.",
  scale_fmt:
    "the weights' scale format (ue8m0: powers of two); the loader reads the scales as stored. A family whose reference quantizes activations reads it itself.",
};

/**
 * The top-level fields of `json` that neither `read` (the family's schema fields) nor `unread`
 * nor COMMON_UNREAD_FIELDS classify: a field nobody decided about.
 */
export function unclassifiedFields(
  json: Readonly<Record<string, unknown>>,
  read: readonly string[],
  unread: UnreadFields,
): string[] {
  return Object.keys(json).filter((k) => !read.includes(k) && !(k in unread) && !(k in COMMON_UNREAD_FIELDS));
}
