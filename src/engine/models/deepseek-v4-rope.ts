/**
 * DeepSeek-V4's RoPE fields, key by key, after HF transformers `configuration_deepseek_v4.py`
 * (`__post_init__`): sliding layers rotate with plain RoPE at `rope_theta`; compressed layers (and
 * their compressors and indexers) at `compress_rope_theta`, scaled by `rope_scaling` (YaRN) with
 * the cos/sin attention factor forced to 1. Two public spellings: the released checkpoints' flat
 * `rope_scaling` (legacy), and transformers v5's `rope_parameters: {main: {...}, compress: {...}}`
 * as `save_pretrained` writes it. Every key of either is read or refused by name.
 */
import { z } from "zod";
import type { YarnScaling } from "../kernels/rope.js";
import { type Fail, positive } from "./config-fields.js";

/** The YaRN keys of a V4 RoPE object (legacy `rope_scaling`, or `rope_parameters.compress`). */
const YARN_KEYS = {
  type: z.string().optional(),
  rope_type: z.string().optional(),
  factor: z.number().positive().optional(),
  original_max_position_embeddings: positive.optional(),
  beta_fast: z.number().optional(),
  beta_slow: z.number().optional(),
};
/** The keys one entry of transformers v5's nested `rope_parameters` adds. */
const NESTED_KEYS = {
  ...YARN_KEYS,
  rope_theta: z.number().positive().optional(),
  partial_rotary_factor: z.number().gt(0).lte(1).optional(),
  // HF sets 1 on `compress` (the reference does not scale cos/sin); any other value is refused.
  attention_factor: z.number().positive().optional(),
};
const ropeObject = (keys: z.core.$ZodLooseShape) => z.looseObject(keys).nullish();

/** The config.json fields v4Rope reads, for the family's schema. */
export const V4_ROPE_FIELDS = {
  rope_theta: z.number().positive().default(10_000),
  compress_rope_theta: z.number().positive().default(160_000),
  rope_scaling: ropeObject(YARN_KEYS),
  rope_parameters: z
    .looseObject({ main: ropeObject(NESTED_KEYS), compress: ropeObject(NESTED_KEYS) })
    .nullish(),
};

type RopeObject = Readonly<Record<string, unknown>> & {
  readonly type?: string | undefined;
  readonly rope_type?: string | undefined;
  readonly factor?: number | undefined;
  readonly original_max_position_embeddings?: number | undefined;
  readonly beta_fast?: number | undefined;
  readonly beta_slow?: number | undefined;
  readonly rope_theta?: number | undefined;
  readonly partial_rotary_factor?: number | undefined;
  readonly attention_factor?: number | undefined;
};

/** What v4Rope reads from V4_ROPE_FIELDS. */
export interface V4RopeFields {
  readonly rope_theta: number;
  readonly compress_rope_theta: number;
  readonly rope_scaling?: RopeObject | null | undefined;
  readonly rope_parameters?:
    | (Readonly<Record<string, unknown>> & {
        readonly main?: RopeObject | null | undefined;
        readonly compress?: RopeObject | null | undefined;
      })
    | null
    | undefined;
}

/** The two RoPE settings of a V4 model: plain for sliding layers, YaRN-scaled for compressed ones. */
export interface V4Rope {
  readonly mainTheta: number;
  readonly compressTheta: number;
  readonly yarn?: YarnScaling;
}

/** Refuses the first key of `object` (at `field`) outside `keys`, naming it. */
function refuseUnknownKeys(object: RopeObject, keys: object, field: string, fail: Fail): void {
  const unknown = Object.keys(object).find((k) => !(k in keys));
  if (unknown !== undefined)
    fail(
      `${field}.${unknown}`,
      `is not a DeepSeek-V4 RoPE key the engine reads (it reads ${Object.keys(keys).join(", ")}); a checkpoint needing it cannot be computed faithfully.`,
    );
}

/** The scaling kind of a RoPE object: its `rope_type`, else `type`, else default. */
const kindOf = (s: RopeObject | null | undefined) => s?.rope_type ?? s?.type ?? "default";

/**
 * The RoPE of a parsed V4 config `c` rotating `ropeDim` of each `headDim`-wide head, either
 * spelling: nested `rope_parameters` wins for θ as in HF; `maxPositions` is YaRN's original
 * context when the config gives none. Refused by name: a key outside the lists above, scaling
 * other than YaRN on compressed layers or any on sliding ones, scaling given in both spellings, a
 * `partial_rotary_factor` other than ropeDim / headDim, an `attention_factor` other than 1, and a
 * flat `rope_parameters` (write it as `rope_scaling`, or nested as transformers v5 does).
 */
export function v4Rope(
  c: V4RopeFields,
  fail: Fail,
  ropeDim: number,
  headDim: number,
  maxPositions: number,
): V4Rope {
  const nested = c.rope_parameters;
  if (nested != null) {
    const flat = Object.keys(nested).find((k) => k !== "main" && k !== "compress");
    if (flat !== undefined)
      fail(
        `rope_parameters.${flat}`,
        "DeepSeek-V4 reads rope_parameters nested as {main: {...}, compress: {...}} (transformers v5); give flat YaRN keys as rope_scaling.",
      );
  }
  const main = nested?.main;
  const compress = nested?.compress;
  for (const [object, field] of [
    [main, "rope_parameters.main"],
    [compress, "rope_parameters.compress"],
  ] as const) {
    if (object == null) continue;
    refuseUnknownKeys(object, NESTED_KEYS, field, fail);
    const fraction = object.partial_rotary_factor;
    if (fraction !== undefined && Math.abs(fraction * headDim - ropeDim) > 1e-9)
      fail(
        `${field}.partial_rotary_factor`,
        `${fraction} rotates ${fraction * headDim} of head_dim ${headDim}, not the ${ropeDim} qk_rope_head_dim / partial_rotary_factor give; make them agree.`,
      );
  }
  if (kindOf(main) !== "default")
    fail(
      "rope_parameters.main.rope_type",
      `"${kindOf(main)}": DeepSeek-V4's sliding layers rotate with plain RoPE; a checkpoint scaling them cannot be computed faithfully.`,
    );
  if (compress?.attention_factor !== undefined && compress.attention_factor !== 1)
    fail(
      "rope_parameters.compress.attention_factor",
      `${compress.attention_factor}: DeepSeek-V4 does not scale cos/sin (HF forces 1); a checkpoint needing it cannot be computed faithfully.`,
    );
  if (c.rope_scaling != null) refuseUnknownKeys(c.rope_scaling, YARN_KEYS, "rope_scaling", fail);
  if (kindOf(c.rope_scaling) !== "default" && compress != null)
    fail(
      "rope_scaling",
      "both rope_scaling and rope_parameters.compress give the compressed layers' RoPE; keep one of them.",
    );
  const [s, field] =
    kindOf(compress) !== "default"
      ? ([compress, "rope_parameters.compress"] as const)
      : ([c.rope_scaling, "rope_scaling"] as const);
  const kind = kindOf(s);
  if (kind !== "default" && kind !== "yarn")
    fail(field, `RoPE scaling "${kind}" is not DeepSeek-V4's (it scales its compressed layers with yarn).`);
  const rope = {
    mainTheta: main?.rope_theta ?? c.rope_theta,
    compressTheta: compress?.rope_theta ?? c.compress_rope_theta,
  };
  if (s == null || kind !== "yarn") return rope;
  return {
    ...rope,
    yarn: {
      factor: s.factor ?? fail(`${field}.factor`, "is required for yarn; set it."),
      originalMaxPositionEmbeddings: s.original_max_position_embeddings ?? maxPositions,
      betaFast: s.beta_fast ?? 32,
      betaSlow: s.beta_slow ?? 1,
      // HF forces the compressed layers' attention factor to 1: an equal mscale pair gives 1.
      mscale: 1,
      mscaleAllDim: 1,
    },
  };
}
