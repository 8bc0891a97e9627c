import { BringupError } from "../../common/errors.js";
import type { ModelSwitch } from "../model/model-switch.js";

/**
 * The engine's kernel switches, read from the environment here and nowhere else, then passed in:
 * BRINGUP_ENGINE_SIMD=0 forces the plain JavaScript kernels (the reference-exact ones);
 * BRINGUP_ENGINE_FMA=0 forces the unfused matmul tile (a mul then an add, rounded twice);
 * BRINGUP_ENGINE_MXFP4=unpacked has MXFP4 weights (and block-scaled FP8 ones) unpacked to f32
 * rows for the tile (the stock op) instead of decoded inside the fused MXFP4 (FP8) kernel (the
 * same bits, more work); BRINGUP_ENGINE_MXFP4=int8 multiplies MXFP4 weights on integer dot products
 * over an input quantized to int8 per block of 32 (matmul/mxfp4-int8.ts: not the same bits, within
 * the error it states); BRINGUP_ENGINE_FP8=scaled multiplies FP8 weights with 128x128 tile scales
 * at one input row by the input times each band's scales, no multiply by a scale per weight
 * (matmul/fp8-rows.wat's scaleInput and its `.scaled` builds: not the same bits, each block's
 * halves summed apart, within the error matmul/fp8-scaled.test.ts states).
 * mxfp4ScratchTokens is not read from the environment: from that many input rows the fused MXFP4
 * (and FP8) path decodes a chunk of rows once into scratch for the tile, below it straight into the
 * multiply-adds (matmul/mxfp4-rows.wat, matmul/fp8-rows.wat's fp8; the same bits). The in-loop form decodes again for every
 * input row, so it pays at one (bench/kernel-before-after.ts --kernel mxfp4-m1), hence 2; 1 keeps
 * the scratch form and Infinity the in-loop form, for A/B.
 */
export interface KernelSwitches {
  readonly simd: boolean;
  readonly fma: boolean;
  readonly mxfp4: "fused" | "unpacked" | "int8";
  readonly fp8: "exact" | "scaled";
  readonly mxfp4ScratchTokens: number;
}

/** See KernelSwitches.mxfp4ScratchTokens. */
export const MXFP4_SCRATCH_TOKENS = 2;

/**
 * The `mxfp4` switch every model that holds MXFP4 weights declares (the loader adds it): which of
 * the MXFP4 paths its engine runs (fused and unpacked give the same bits; int8 is within the error
 * matmul/mxfp4-int8.ts states); its default is the environment's.
 */
export function mxfp4Switch(env: NodeJS.ProcessEnv = process.env): ModelSwitch {
  return {
    name: "mxfp4",
    values: ["fused", "unpacked", "int8"],
    default: kernelSwitches(env).mxfp4,
    description:
      "how MXFP4 weights are multiplied: decoded inside the fused kernel, unpacked to f32 rows first (the stock op), or on int8 dot products over an input quantized per block of 32 (not bit-identical)",
  };
}

/**
 * The `fp8` switch every model that holds block-scaled FP8 weights declares (the loader adds it,
 * with the scale blocks they have, e.g. "128x128", and whether fp8=scaled takes every one of them:
 * matmul/fp8-rows.ts's fp8ScaledFits): exact, or scaled where it fits; its default is the
 * environment's where allowed.
 */
export function fp8Switch(
  scaleBlocks: readonly string[],
  fits: boolean,
  env: NodeJS.ProcessEnv = process.env,
): Fp8Switch {
  return {
    name: "fp8",
    values: fits ? ["exact", "scaled"] : ["exact"],
    default: fits ? kernelSwitches(env).fp8 : "exact",
    description: `how FP8 weights are multiplied at one input row: each weight times its scale (exact: the unpacked path's bits), or${fits ? "" : " (not for this model's scale blocks)"} the input times each 128x128 tile's scale with none a weight (scaled: not bit-identical)`,
    scaleBlocks,
  };
}

/** The fp8 switch: a ModelSwitch that also says which scale blocks the model's FP8 weights have. */
export interface Fp8Switch extends ModelSwitch {
  readonly scaleBlocks: readonly string[];
}

/**
 * ENGINE_OPTIONS_INVALID, by name, for fp8=scaled on a model whose FP8 weights have scale blocks
 * it does not take (1x32: a scale per row), rather than the generic "must be one of".
 */
export function refuseFp8Scaled(
  switches: readonly ModelSwitch[],
  given: Readonly<Record<string, string>>,
): void {
  const declared = switches.find((s) => s.name === "fp8");
  if (given.fp8 !== "scaled" || declared === undefined || declared.values.includes("scaled")) return;
  const blocks = "scaleBlocks" in declared ? (declared as Fp8Switch).scaleBlocks.join(", ") : "other";
  throw new BringupError(
    "ENGINE_OPTIONS_INVALID",
    `switch fp8=scaled multiplies by the input times each scale tile's scale, once for a band of 128 rows or more, so it needs FP8 weights with 128x128 tile scales; this model's FP8 weights have scale blocks of ${blocks}. Drop the switch (fp8=exact), or convert the checkpoint with --fp8-block tile128.`,
    { subject: "fp8" },
  );
}

export function kernelSwitches(env: NodeJS.ProcessEnv = process.env): KernelSwitches {
  return {
    simd: env.BRINGUP_ENGINE_SIMD !== "0",
    fma: env.BRINGUP_ENGINE_FMA !== "0",
    mxfp4:
      env.BRINGUP_ENGINE_MXFP4 === "unpacked" || env.BRINGUP_ENGINE_MXFP4 === "int8"
        ? env.BRINGUP_ENGINE_MXFP4
        : "fused",
    fp8: env.BRINGUP_ENGINE_FP8 === "scaled" ? "scaled" : "exact",
    mxfp4ScratchTokens: MXFP4_SCRATCH_TOKENS,
  };
}
