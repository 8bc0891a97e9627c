import type { MessagePort } from "node:worker_threads";
import { CONTROL, claimUnits, type KernelThread } from "./kernel-thread.js";
import { claimsAhead, type JobMessage, type KernelName, type KernelParams, runUnit } from "./registry.js";
import { waitForUnits } from "./wait-for-units.js";

/** What a dispatch needs of the pool: its control slots, its helpers' ports, the calling thread. */
export interface Dispatcher {
  readonly ctrl: Int32Array;
  readonly helpers: readonly { readonly port: MessagePort }[];
  readonly thread: KernelThread;
  /** The shared memory's byte length now (0 without one). */
  readonly memoryBytes: number;
}

/**
 * Runs `units` units of a registered kernel on the calling thread and the helpers: posts the job
 * to every helper and wakes them; runs `writeInputs` (the inputs' last part, written while the
 * helpers wake, which takes them tens of microseconds) and opens the job to them (awaitInputs);
 * then claims units alongside them until all are taken, and waits for the last to finish.
 */
export function dispatch<N extends KernelName>(
  pool: Dispatcher,
  kernel: N,
  params: KernelParams<N>,
  units: number,
  writeInputs?: () => void,
): void {
  const { ctrl, helpers, thread, memoryBytes } = pool;
  const base = Atomics.load(ctrl, CONTROL.NEXT);
  const finishedBase = Atomics.load(ctrl, CONTROL.FINISHED);
  const gated = writeInputs !== undefined;
  const job = { type: "job", kernel, params, base, units, memoryBytes, gated } as JobMessage;
  for (const { port } of helpers) port.postMessage(job);
  Atomics.add(ctrl, CONTROL.SEQ, 1);
  Atomics.notify(ctrl, CONTROL.SEQ);
  // A write that fails still opens the job and lets it run to its end, so no helper waits forever
  // and the shared counters stay in step for the next dispatch; its error is thrown after.
  let failed: { error: unknown } | undefined;
  if (gated) {
    try {
      writeInputs();
    } catch (error) {
      failed = { error };
    }
    Atomics.store(ctrl, CONTROL.READY, base);
    Atomics.notify(ctrl, CONTROL.READY);
  }
  claimUnits(ctrl, base, units, (unit, next) => runUnit(thread, job, unit, next), claimsAhead(job));
  waitForUnits(ctrl, helpers, finishedBase + units);
  if (failed !== undefined) throw failed.error;
}
