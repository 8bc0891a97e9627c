import type { ModelSwitch } from "../model/model.js";

/**
 * The engine's kernel switches, read from the environment here and nowhere else, then passed in:
 * BRINGUP_ENGINE_SIMD=0 forces the plain JavaScript kernels (the reference-exact ones);
 * BRINGUP_ENGINE_FMA=0 forces the unfused matmul tile (a mul then an add, rounded twice);
 * BRINGUP_ENGINE_MXFP4=unpacked has MXFP4 weights unpacked to f32 rows for the tile (the stock
 * op) instead of decoded inside the fused MXFP4 kernel (the same bits, more work).
 */
export interface KernelSwitches {
  readonly simd: boolean;
  readonly fma: boolean;
  readonly mxfp4: "fused" | "unpacked";
}

/**
 * The `mxfp4` switch every model that holds MXFP4 weights declares (the loader adds it): which of
 * the two MXFP4 paths its engine runs, the same bits either way; its default is the environment's.
 */
export function mxfp4Switch(env: NodeJS.ProcessEnv = process.env): ModelSwitch {
  return {
    name: "mxfp4",
    values: ["fused", "unpacked"],
    default: kernelSwitches(env).mxfp4,
    description:
      "how MXFP4 weights are multiplied: decoded inside the fused kernel, or unpacked to f32 rows first (the stock op)",
  };
}

export function kernelSwitches(env: NodeJS.ProcessEnv = process.env): KernelSwitches {
  return {
    simd: env.BRINGUP_ENGINE_SIMD !== "0",
    fma: env.BRINGUP_ENGINE_FMA !== "0",
    mxfp4: env.BRINGUP_ENGINE_MXFP4 === "unpacked" ? "unpacked" : "fused",
  };
}
