import { type MessagePort, receiveMessageOnPort, workerData } from "node:worker_threads";
import {
  applyState,
  awaitInputs,
  CONTROL,
  claimUnits,
  coverMemory,
  type GrowableMemory,
  type KernelModules,
  kernelThread,
  type StateMessage,
} from "./kernel-thread.js";
import { claimsAhead, type JobMessage, runUnit } from "./registry.js";

/** What MatmulPool hands each worker it starts. */
export interface WorkerInit {
  readonly ctrl: Int32Array;
  readonly port: MessagePort;
  readonly modules: KernelModules;
  readonly memory: GrowableMemory | undefined;
}

const { ctrl, port, modules, memory } = workerData as WorkerInit;
const thread = kernelThread(modules, memory);

/**
 * Sleeps on the sequence slot until the pool dispatches, then drains this worker's port in order
 * (state changes, then the job, whose units it claims alongside the other threads). It goes back to
 * sleep at once after a job: no spinning, so an idle helper costs no CPU.
 */
// Start from 0, not the current value: jobs posted before this thread started are already queued.
let seen = 0;
for (;;) {
  Atomics.wait(ctrl, CONTROL.SEQ, seen);
  seen = Atomics.load(ctrl, CONTROL.SEQ);
  for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) {
    const message = m.message as StateMessage | JobMessage;
    if (message.type !== "job") {
      applyState(thread, message);
      continue;
    }
    try {
      coverMemory(memory, message.memoryBytes);
      if (message.gated) awaitInputs(ctrl, message.base);
      const run = (unit: number, next: number) => runUnit(thread, message, unit, next);
      claimUnits(ctrl, message.base, message.units, run, claimsAhead(message));
    } catch (error) {
      port.postMessage({ type: "error", message: String((error as Error)?.stack ?? error) });
      Atomics.store(ctrl, CONTROL.FAILED, 1);
      Atomics.notify(ctrl, CONTROL.FINISHED);
    }
  }
}
