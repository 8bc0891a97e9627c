import type { ModelSwitch } from "../model/model-switch.js";

/**
 * The engine's kernel switches, read from the environment here and nowhere else, then passed in:
 * BRINGUP_ENGINE_SIMD=0 forces the plain JavaScript kernels (the reference-exact ones);
 * BRINGUP_ENGINE_FMA=0 forces the unfused matmul tile (a mul then an add, rounded twice);
 * BRINGUP_ENGINE_MXFP4=unpacked has MXFP4 weights (and block-scaled FP8 ones) unpacked to f32
 * rows for the tile (the stock op) instead of decoded inside the fused MXFP4 (FP8) kernel (the
 * same bits, more work); BRINGUP_ENGINE_MXFP4=int8 multiplies MXFP4 weights on integer dot products
 * over an input quantized to int8 per block of 32 (matmul/mxfp4-int8.ts: not the same bits, within
 * the error it states).
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

export function kernelSwitches(env: NodeJS.ProcessEnv = process.env): KernelSwitches {
  return {
    simd: env.BRINGUP_ENGINE_SIMD !== "0",
    fma: env.BRINGUP_ENGINE_FMA !== "0",
    mxfp4:
      env.BRINGUP_ENGINE_MXFP4 === "unpacked" || env.BRINGUP_ENGINE_MXFP4 === "int8"
        ? env.BRINGUP_ENGINE_MXFP4
        : "fused",
    mxfp4ScratchTokens: MXFP4_SCRATCH_TOKENS,
  };
}
