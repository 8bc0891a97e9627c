import { z } from "zod";
import { AbArm, KvLayout, Switches, WeightsConversion } from "./build-schema.js";
import { abArmBuild, abArmNames, buildKey, describeBuild } from "./builds.js";
import { FEATURE_IDS } from "./features.js";

/** Port ids double as directory names and URL slugs. */
export const PORT_ID_PATTERN = /^[a-z0-9]+(?:[.-][a-z0-9]+)*$/;
export const PortId = z.string().regex(PORT_ID_PATTERN, "a lowercase slug such as mimo-v2.6-flash");

/** Record ids are `<port>/<slug>`; the manifest refers to the records of its own port. */
export const RECORD_ID_PATTERN = /^[a-z0-9]+(?:[.-][a-z0-9]+)*\/[a-z0-9]+(?:[.-][a-z0-9]+)*$/;
export const RecordRef = z
  .string()
  .regex(RECORD_ID_PATTERN, "a record id such as kimi-k2.7-code/decode-one-stream");

export const WEIGHT_FORMATS = ["bf16", "fp8", "mxfp4"] as const;
export const WeightFormat = z.enum(WEIGHT_FORMATS);

const Billions = z.number().positive().describe("parameters in billions (1.02T is 1020)");

export const Model = z.strictObject({
  name: z.string().min(1),
  family: z.string().min(1),
  architecture: z.enum(["moe", "dense"]).optional().describe("left out where the source does not say"),
  total_params_b: Billions.optional().describe("left out where the source does not say"),
  active_params_b: Billions.optional().describe("active parameters per token, for MoE models when published"),
  weight_formats: z.array(WeightFormat).min(1).optional().describe("left out where the source does not say"),
  context_length: z.int().positive().optional().describe("longest context the port serves, in tokens"),
});

export const TargetVariant = z.strictObject({
  name: z.string().min(1),
  cards: z.int().positive(),
  nodes: z.int().positive(),
  weight_format: WeightFormat.optional(),
  documented: z.boolean().describe("true when the variant is written up but not the one the port ships"),
  note: z.string().min(1),
});

export const Target = z.strictObject({
  accelerator: z.enum(["gaudi2", "gaudi3"]),
  cards: z.int().positive(),
  nodes: z.int().positive(),
  variants: z.array(TargetVariant).default([]),
});

export const EXECUTION_MODES = ["lazy", "torch-compile-static"] as const;

/** serve_env is written into generated shell (recipes): names and values admit no shell expansion. */
export const ENV_NAME_PATTERN = /^[A-Z_][A-Z0-9_]*$/;
export const ENV_VALUE_PATTERN = /^[A-Za-z0-9_.,:/=+@%-]+$/;

export const Software = z.strictObject({
  gaudi_software: z.string().regex(/^\d+\.\d+\.\d+$/, "a version such as 1.24.1"),
  execution_mode: z.enum(EXECUTION_MODES).describe("lazy mode, or torch.compile with static shapes"),
  hpu_graphs: z.boolean(),
  serve_env: z
    .record(
      z.string().regex(ENV_NAME_PATTERN, "an environment variable name such as VLLM_SKIP_WARMUP"),
      z.string().regex(ENV_VALUE_PATTERN, "letters, digits and _ . , : / = + @ % -"),
    )
    .optional()
    .describe("environment variables the server needs beyond those the execution mode sets"),
});

export const Status = z.strictObject({
  state: z.enum(["production", "experimental", "in-progress", "retired"]),
  note: z.string().min(1).optional(),
});

const RelativeFraction = z.number().positive().max(1);

/** A gate's own build to compare against, where it differs from the reference section's baseline. */
const GateBaseline = z
  .strictObject({
    kv_layout: z.enum(["window-sized", "full"]).optional(),
    switches: Switches.optional(),
    weights: WeightsConversion.optional().describe("serve the tiny checkpoint converted so instead"),
    max_num_batched_tokens: z
      .int()
      .positive()
      .optional()
      .describe(
        "the most tokens one engine step runs, so prompts longer than it are prefilled in chunks (default: the engine's)",
      ),
    speculative_tokens: z
      .int()
      .positive()
      .optional()
      .describe("tokens the model's MTP layer drafts per step, verified in one step (default: no drafting)"),
  })
  .optional()
  .describe(
    "on the embedded engine: the build this gate compares against, instead of the reference section's baseline",
  );

export const PerplexityGate = z.strictObject({
  kind: z.literal("perplexity"),
  reference: z.string().min(1).describe("what the port's perplexity is compared against"),
  max_relative_diff: z
    .number()
    .min(0)
    .max(1)
    .describe("largest |ppl - ref| / ref that passes, as a fraction (0: the same value, bit for bit)"),
  baseline: GateBaseline,
  record: RecordRef.optional(),
});

export const NeedlesGate = z.strictObject({
  kind: z.literal("needles"),
  model: z
    .enum(["retrieval"])
    .optional()
    .describe("on the embedded engine, run against the port's constructed retrieval variant"),
  contexts: z.array(z.int().positive()).min(1).describe("context lengths in tokens"),
  needles: z.int().positive(),
  min_retrieved: z.int().positive(),
  record: RecordRef.optional(),
});

export const BitIdenticalDecodeGate = z
  .strictObject({
    kind: z.literal("bit-identical-decode"),
    compare: z.enum(["two-builds", "batch-invariance", "golden"]),
    sampling: z.array(z.enum(["greedy", "seeded"])).min(1),
    concurrent: z
      .int()
      .min(2)
      .optional()
      .describe(
        "batch-invariance: decodes in flight at once, the fixed requests repeated to fill them (default: one of each)",
      ),
    baseline: GateBaseline,
    record: RecordRef.optional(),
  })
  .refine((gate) => gate.concurrent === undefined || gate.compare === "batch-invariance", {
    path: ["concurrent"],
    message:
      "only a batch-invariance comparison sends decodes at once; remove it or set compare: batch-invariance",
  });

export const KvCapacityGate = z.strictObject({
  kind: z.literal("kv-capacity"),
  expected_ratio: z
    .number()
    .positive()
    .describe("token capacity relative to the baseline build (by default a full-attention KV layout)"),
  tolerance: RelativeFraction.describe("allowed relative deviation from expected_ratio"),
  baseline: GateBaseline,
  record: RecordRef.optional(),
});

export const WeightsBitIdentityGate = z.strictObject({
  kind: z.literal("weights-bit-identity"),
  conversion: z
    .string()
    .min(1)
    .describe("the conversion or loader whose output must equal its source bit for bit"),
  convert: WeightsConversion.optional().describe(
    "on the embedded engine: the conversion `bringup up` runs on the tiny checkpoint and compares with it",
  ),
  record: RecordRef.optional(),
});

export const DeviceLogprobsGate = z.strictObject({
  kind: z.literal("device-logprobs"),
  device: z
    .string()
    .min(1)
    .describe("what serves the device model code, e.g. the bringup_vllm plugin on vLLM's CPU backend"),
  max_logprob_diff: z
    .number()
    .positive()
    .describe(
      "largest |device - reference| of a prompt token's logprob (nats) that passes; say why in a comment",
    ),
  top_k: z
    .int()
    .positive()
    .max(20)
    .describe("where greedy tokens first differ, each side's token must be in the other's top k"),
  window_tokens: z
    .int()
    .min(64)
    .optional()
    .describe(
      "tokens per scored corpus window (default 192); longer than a sparse attention's top-k so the selection is exercised",
    ),
  served: z
    .array(z.string().min(1))
    .min(1)
    .describe("the parts of the model vLLM served (its layers, or the plugin's blocks inside vLLM)"),
  block_by_block: z
    .array(z.string().min(1))
    .optional()
    .describe(
      "the plugin's plain-PyTorch blocks vLLM's CPU backend cannot run, tested against the engine layer by layer instead",
    ),
  record: RecordRef.optional(),
});

/**
 * A port whose device model code vLLM does not serve here: the plugin's plain-PyTorch blocks are
 * checked against the reference engine one by one instead (device-plugin/tests/blocks.py).
 */
export const DeviceBlocks = z.strictObject({
  test: z
    .string()
    .regex(
      /^tests\/test_[a-z0-9_]+\.py$/,
      "a pytest file under device-plugin/, such as tests/test_glm_flash_blocks.py",
    )
    .describe("the plugin's pytest file that checks the port's blocks against the engine's dump"),
  not_served: z.string().min(1).describe("why vLLM does not serve the port's device code here"),
  blocks: z
    .array(z.string().min(1))
    .min(1)
    .describe("the plugin's plain-PyTorch blocks checked against the engine layer output by layer output"),
  record: RecordRef,
});

export const Gate = z.discriminatedUnion("kind", [
  PerplexityGate,
  NeedlesGate,
  BitIdenticalDecodeGate,
  KvCapacityGate,
  WeightsBitIdentityGate,
  DeviceLogprobsGate,
]);
export const GATE_KINDS = [
  "perplexity",
  "needles",
  "bit-identical-decode",
  "kv-capacity",
  "weights-bit-identity",
  "device-logprobs",
] as const;

/** A headline item is either a measured or reported figure (by record) or a fact stated without numbers. */
export const HeadlineItem = z.union([
  z.strictObject({ record: RecordRef }),
  z.strictObject({ text: z.string().min(1) }),
]);

/** An interleaved A/B benchmark of two builds of the tiny reference model on the embedded engine. */
export const AbBenchmark = z.strictObject({
  kind: z.literal("ab"),
  metric: z
    .string()
    .min(1)
    .describe("the per-trial metric compared, as `bringup bench ab --metric` names it"),
  a: AbArm,
  b: AbArm,
  prompt_tokens: z.int().positive().describe("prompt length of each request: the context decode runs at"),
  output_tokens: z.int().positive(),
  requests: z.int().positive().default(1).describe("requests per trial"),
  blocks: z.int().min(2).describe("ABBA blocks; each gives one paired ratio"),
  record: RecordRef,
});

/**
 * The tiny reference config of the port's architecture and what `bringup up` runs on it: the
 * engine's model family that reads `config` (src/engine/models/) builds seeded weights for it, the
 * embedded engine serves them, and the gates and benchmarks here run against that server (or
 * against --endpoint).
 */
export const Reference = z
  .strictObject({
    config: z
      .record(z.string(), z.unknown())
      .describe(
        "an HF config.json object (architectures, model_type) that a model family of the engine reads; small enough for two CPU cores",
      ),
    max_model_len: z.int().positive().describe("the context the embedded server is started with"),
    kv_layout: KvLayout.default("window-sized").describe("the layout the port's build serves with"),
    switches: Switches.optional().describe("the switches the port's build serves with"),
    baseline: z
      .strictObject({ kv_layout: KvLayout, switches: Switches.optional() })
      .optional()
      .describe("the build that reference-comparing gates (perplexity, kv-capacity) compare against"),
    gates: z.array(Gate).min(1),
    benchmarks: z.array(AbBenchmark).default([]),
    device_check: DeviceLogprobsGate.extend({
      record: RecordRef,
      hf_overrides: z
        .record(z.string(), z.unknown())
        .optional()
        .describe(
          "config.json fields vLLM reads differently for this check only (vLLM's --hf-overrides); say why in a comment",
        ),
      env: z
        .record(z.string().regex(/^VLLM_[A-Z0-9_]+$/), z.string())
        .optional()
        .describe("vLLM environment switches for this check only (VLLM_* names); say why in a comment"),
    })
      .optional()
      .describe(
        "the device model code (device-plugin/, served by vLLM on the CPU) against the reference engine on the tiny checkpoint: `bringup device check` runs it",
      ),
    device_blocks: DeviceBlocks.optional().describe(
      "where vLLM does not serve the device code: its blocks checked one by one against the engine; `bringup device check` runs it",
    ),
  })
  .superRefine((reference, ctx) => {
    reference.benchmarks.forEach((spec, index) => {
      const path = ["benchmarks", index];
      const a = abArmBuild(spec.a, reference);
      if (buildKey(a) === buildKey(abArmBuild(spec.b, reference))) {
        ctx.addIssue({
          code: "custom",
          path,
          message: `arms a and b are the same build (${describeBuild(a)}); give one of them another kv_layout or switch.`,
        });
        return;
      }
      const names = abArmNames(spec, reference);
      if (names.a === names.b) {
        ctx.addIssue({
          code: "custom",
          path,
          message: `arms a and b are both named "${names.a}"; name each for what it runs.`,
        });
      }
    });
  });

export const COOKBOOK_KERNELS = ["mxfp4-moe-decode"] as const;

export const PortManifest = z
  .strictObject({
    id: PortId,
    model: Model,
    scope: z
      .enum(["full", "small"])
      .describe("full: a written-up port; small: a few model patches, explained on its recipe page"),
    hard: z.strictObject({
      summary: z.string().min(1).describe("one line for the index: what made the model hard to serve"),
      features: z.array(z.enum(FEATURE_IDS)).describe("at least one for a full port"),
    }),
    lineage: z
      .strictObject({
        summary: z.string().min(1).describe("the public work the model descends from, in a sentence"),
        sources: z
          .array(z.strictObject({ title: z.string().min(1), url: z.url({ protocol: /^https$/ }) }))
          .default([])
          .describe("public pages a reader can open: reference code, papers"),
      })
      .optional()
      .describe("where the architecture comes from, with links to public sources"),
    cookbook_kernels: z.array(z.enum(COOKBOOK_KERNELS)).default([]),
    target: Target,
    software: Software,
    status: Status,
    gates: z.array(Gate).default([]),
    headline: z.array(HeadlineItem).default([]),
    reference: Reference.optional(),
  })
  .refine((manifest) => manifest.scope === "small" || manifest.hard.features.length > 0, {
    path: ["hard", "features"],
    message: "a full port names at least one feature that made it hard",
  });

export type PortManifest = z.infer<typeof PortManifest>;
export type PortManifestInput = z.input<typeof PortManifest>;
export type Gate = z.infer<typeof Gate>;
export type HeadlineItem = z.infer<typeof HeadlineItem>;
export type Reference = z.infer<typeof Reference>;
export type AbBenchmark = z.infer<typeof AbBenchmark>;

/** The manifest schema as JSON Schema, for editors and for `bringup ports schema`. */
export function manifestJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(PortManifest, { io: "input" }) as Record<string, unknown>;
}
