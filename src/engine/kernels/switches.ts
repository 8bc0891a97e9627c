/**
 * The engine's kernel switches, read from the environment here and nowhere else, then passed in:
 * BRINGUP_ENGINE_SIMD=0 forces the plain JavaScript kernels (the reference-exact ones);
 * BRINGUP_ENGINE_FMA=0 forces the unfused matmul tile (a mul then an add, rounded twice).
 */
export interface KernelSwitches {
  readonly simd: boolean;
  readonly fma: boolean;
}

export function kernelSwitches(env: NodeJS.ProcessEnv = process.env): KernelSwitches {
  return { simd: env.BRINGUP_ENGINE_SIMD !== "0", fma: env.BRINGUP_ENGINE_FMA !== "0" };
}
