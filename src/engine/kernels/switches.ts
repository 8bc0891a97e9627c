/**
 * The engine's kernel switches, read from the environment here and nowhere else, then passed in:
 * BRINGUP_ENGINE_SIMD=0 forces the plain JavaScript kernels (the reference-exact ones);
 * BRINGUP_ENGINE_FMA=0 forces the unfused matmul tile (a mul then an add, rounded twice);
 * BRINGUP_ENGINE_MXFP4=unpacked has MXFP4 weights (and block-scaled FP8 ones) unpacked to f32
 * rows for the tile (the stock op) instead of decoded inside the fused MXFP4 (FP8) kernel (the
 * same bits, more work).
 */
export interface KernelSwitches {
  readonly simd: boolean;
  readonly fma: boolean;
  readonly mxfp4: "fused" | "unpacked";
}

export function kernelSwitches(env: NodeJS.ProcessEnv = process.env): KernelSwitches {
  return {
    simd: env.BRINGUP_ENGINE_SIMD !== "0",
    fma: env.BRINGUP_ENGINE_FMA !== "0",
    mxfp4: env.BRINGUP_ENGINE_MXFP4 === "unpacked" ? "unpacked" : "fused",
  };
}
