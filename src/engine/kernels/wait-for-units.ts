import { type MessagePort, receiveMessageOnPort } from "node:worker_threads";
import { BringupError } from "../../common/errors.js";
import { CONTROL } from "./kernel-thread.js";

/** How long a dispatch may wait for its helpers before the pool declares them dead. */
const WORKER_STALL_MS = 120_000;

/**
 * Waits until the pool's FINISHED counter (`ctrl`, kernel-thread.ts CONTROL) reaches `target`, the
 * units its helpers claimed being done; throws, with the reasons the helpers posted on their
 * ports, when one failed or none answered for WORKER_STALL_MS.
 */
export function waitForUnits(
  ctrl: Int32Array,
  helpers: readonly { readonly port: MessagePort }[],
  target: number,
): void {
  const started = Date.now();
  // The helpers usually finish within microseconds of this thread: spin that long before sleeping.
  const spinUntil = performance.now() + 0.2;
  while (((Atomics.load(ctrl, CONTROL.FINISHED) - target) | 0) < 0 && performance.now() < spinUntil);
  for (;;) {
    const done = Atomics.load(ctrl, CONTROL.FINISHED);
    if (((done - target) | 0) >= 0 || Atomics.load(ctrl, CONTROL.FAILED) !== 0) break;
    if (
      Atomics.wait(ctrl, CONTROL.FINISHED, done, 1000) === "timed-out" &&
      Date.now() - started > WORKER_STALL_MS
    ) {
      Atomics.store(ctrl, CONTROL.FAILED, 1);
      break;
    }
  }
  if (Atomics.load(ctrl, CONTROL.FAILED) !== 0) {
    const reasons: string[] = [];
    for (const { port } of helpers) {
      for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) {
        if (m.message?.type === "error") reasons.push(m.message.message);
      }
    }
    throw new BringupError(
      "ENGINE_WORKER_FAILED",
      `a kernel worker thread failed (${reasons.join("; ") || "it stopped answering"}); restart the engine.`,
    );
  }
}
