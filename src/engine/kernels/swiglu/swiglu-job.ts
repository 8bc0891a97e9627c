import type { ThreadKernel } from "../kernel-thread.js";
import type { SwigluSimd } from "./swiglu-simd-module.js";

/** gate = silu(gate) · up over `vectors` groups of four f32 at byte offsets g and u, in `units` ranges. */
export interface SwigluJob {
  readonly g: number;
  readonly u: number;
  readonly vectors: number;
  readonly units: number;
}

/** Unit i: a contiguous range of whole vectors (each value is computed alone: no split changes a bit). */
export const swigluJob: ThreadKernel<SwigluJob> = {
  run(thread, job, unit) {
    const v0 = Math.floor((unit * job.vectors) / job.units);
    const v1 = Math.floor(((unit + 1) * job.vectors) / job.units);
    (thread.swiglu as SwigluSimd).swiglu(job.g + 16 * v0, job.u + 16 * v0, v1 - v0);
  },
};
