import { stat } from "node:fs/promises";
import { join } from "node:path";
import { BringupError, isBringupError } from "../common/errors.js";
import { MAX_CONFIG_BYTES, readBoundedText } from "./bounded-file.js";
import type { Dtype } from "./dtypes.js";

/** How one logical weight is stored in a written checkpoint. */
export type WrittenFormat =
  | { readonly kind: "plain"; readonly dtype: Dtype }
  | { readonly kind: "mxfp4" }
  | {
      readonly kind: "fp8";
      /**
       * The scale blocks its scales fit: one, or several for a weight small enough that they
       * coincide (a single row of at most 32 columns has one scale under [1, 32] and [128, 128]).
       */
      readonly blocks: readonly (readonly [number, number])[];
      /** Every scale is a power of two (re-encoded MXFP4), which engines may apply as a shift. */
      readonly powerOfTwoScales: boolean;
    };

const FLOATS = new Set<Dtype>(["F32", "F16", "BF16", "F64"]);

/** A checkpoint directory's config.json, or undefined for a lone file or a directory without one. */
export async function readModelConfig(source: string): Promise<Record<string, unknown> | undefined> {
  if (!(await stat(source)).isDirectory()) return undefined;
  const path = join(source, "config.json");
  let text: string;
  try {
    text = await readBoundedText(path, MAX_CONFIG_BYTES);
  } catch (error) {
    if (isBringupError(error) && error.code !== "FILE_NOT_FOUND") throw error;
    return undefined;
  }
  try {
    const config: unknown = JSON.parse(text);
    if (typeof config === "object" && config !== null && !Array.isArray(config))
      return config as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new BringupError("BAD_CONFIG", `${path}: not a JSON object; fix it before converting.`, {
    subject: path,
  });
}

/**
 * Which weights a config's quantization_config keeps unquantized: its `modules_to_not_convert`
 * (Hugging Face) and `ignored_layers` (vLLM), module names or patterns with `*`, matching a weight
 * inside that module (`model.layers.*.self_attn` matches `model.layers.0.self_attn.q_proj.weight`).
 */
export function keptBySource(config: Record<string, unknown> | undefined): (weight: string) => boolean {
  const quantization = config?.quantization_config as Record<string, unknown> | undefined;
  const patterns = [quantization?.modules_to_not_convert, quantization?.ignored_layers].flatMap((list) =>
    Array.isArray(list) ? list.filter((p): p is string => typeof p === "string" && p.length > 0) : [],
  );
  if (patterns.length === 0) return () => false;
  const alternatives = patterns.map((p) =>
    p
      .split("*")
      .map((piece) => piece.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*"),
  );
  const match = new RegExp(`(^|\\.)(${alternatives.join("|")})(\\.|$)`);
  return (weight) => match.test(weight);
}

/** The module a weight belongs to: its name without a trailing weight or bias. */
function moduleOf(weight: string): string {
  return weight.replace(/[._](weight|bias)$/, "");
}

/**
 * The quantization_config that describes the weights written, or undefined when none is quantized:
 * the method, the FP8 scale layout the tensors have, and every module left unquantized under both
 * names engines read. Throws when no one config can describe them (MXFP4 beside FP8, or two FP8
 * scale layouts): an engine would misread some of the weights.
 */
export function describeQuantization(
  weights: ReadonlyMap<string, WrittenFormat>,
  source: Record<string, unknown> | undefined,
  output: string,
): Record<string, unknown> | undefined {
  const formats = [...weights.values()];
  const fp8 = formats.filter((f) => f.kind === "fp8");
  const mxfp4 = formats.some((f) => f.kind === "mxfp4");
  if (fp8.length === 0 && !mxfp4) return undefined;
  if (fp8.length > 0 && mxfp4) {
    throw new BringupError(
      "MIXED_QUANTIZATION",
      `${output}: the output would hold both MXFP4 and FP8 weights, which no quantization_config describes; convert every quantized weight to one format (--to fp8 or --to mxfp4).`,
      { subject: output },
    );
  }
  const quantized = new Set(
    [...weights].filter(([, f]) => f.kind !== "plain").map(([name]) => moduleOf(name)),
  );
  const kept = [
    ...new Set(
      [...weights]
        .filter(([, f]) => f.kind === "plain" && FLOATS.has(f.dtype))
        .map(([name]) => moduleOf(name))
        .filter((m) => !quantized.has(m)),
    ),
  ].sort();
  const unquantized = { modules_to_not_convert: kept, ignored_layers: kept };
  if (mxfp4) return { quant_method: "mxfp4", ...unquantized };
  const sourceQuantization = source?.quantization_config as Record<string, unknown> | undefined;
  const fitting = (fp8[0] as (typeof fp8)[number]).blocks.filter((b) =>
    fp8.every((f) => f.blocks.some((c) => c.join("x") === b.join("x"))),
  );
  if (fitting.length === 0) {
    const layouts = [...new Set(fp8.filter((f) => f.blocks.length === 1).map((f) => f.blocks[0]?.join("x")))];
    throw new BringupError(
      "MIXED_FP8_BLOCKS",
      `${output}: the output would hold FP8 weights with scale blocks of ${layouts.join(" and ")}, but weight_block_size names one; pick the source's layout with --fp8-block (block32 for 1x32, tile128 for 128x128).`,
      { subject: output },
    );
  }
  // Where every weight fits several (all are tiny), the source's own layout is kept.
  const sourceBlock = Array.isArray(sourceQuantization?.weight_block_size)
    ? sourceQuantization.weight_block_size.join("x")
    : undefined;
  const block = fitting.find((b) => b.join("x") === sourceBlock) ?? (fitting[0] as readonly [number, number]);
  const activation =
    sourceQuantization?.quant_method === "fp8" && typeof sourceQuantization.activation_scheme === "string"
      ? sourceQuantization.activation_scheme
      : "dynamic";
  return {
    quant_method: "fp8",
    fmt: "e4m3",
    activation_scheme: activation,
    weight_block_size: [...block],
    ...(fp8.every((f) => f.powerOfTwoScales) ? { scale_fmt: "ue8m0" } : {}),
    ...unquantized,
  };
}
