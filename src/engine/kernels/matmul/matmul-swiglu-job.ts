import type { ThreadKernel } from "../kernel-thread.js";
import type { SwigluSimd } from "../swiglu/swiglu-simd-module.js";
import { type MatmulJob, segmentRows, weightsAt } from "./matmul-job.js";
import { unitStart } from "./row-units.js";

/**
 * A gated MLP's first half in one dispatch: gate = silu(x · gateᵀ) · (x · upᵀ). Its segments are
 * the gate and the up weight, both of `I` rows (a multiple of four), their [M, I] outputs in the
 * shared memory (outOffset >= 0), and the thread's swiglu.wat present.
 */
export interface MatmulSwigluJob extends MatmulJob {
  readonly I: number;
}

/**
 * Unit d: its rows (row-units.ts, over I) of the gate and of the up weight, then swiglu.wat
 * over those columns of every input row, so no thread waits for the whole of both matmuls before
 * the activation and no second dispatch runs it. Each output of the matmul and each value of the
 * activation is computed alone, as the separate dispatches compute it: the same bits.
 */
export const matmulSwigluJob: ThreadKernel<MatmulSwigluJob> = {
  claimsAhead: true,
  run(thread, job, unit, next) {
    const { I, M } = job;
    const r0 = unitStart(job.units, unit);
    const r1 = Math.min(I, unitStart(job.units, unit + 1));
    const [gate, up] = job.segments as [MatmulJob["segments"][0], MatmulJob["segments"][0]];
    // The gate's rows read the up weight's ahead, those the next unit's gate rows (claimsAhead).
    const nextGate = next < 0 ? -1 : weightsAt(thread, job, gate, unitStart(job.units, next));
    segmentRows(thread, job, gate, r0, r1, weightsAt(thread, job, up, r0));
    segmentRows(thread, job, up, r0, r1, nextGate);
    const simd = thread.swiglu as SwigluSimd;
    for (let m = 0; m < M; m++) {
      const at = 4 * (m * I + r0);
      simd.swiglu(gate.outOffset + at, up.outOffset + at, (r1 - r0) >> 2);
    }
  },
};
