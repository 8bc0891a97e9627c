import { CONTROL } from "./kernel-thread.js";

/**
 * How long a helper watches for the next dispatch before it naps: a decode step's dispatches come
 * tens of microseconds apart.
 */
const WATCH_MS = 0.1;
/** A napping helper looks again this often (a timed wait, so nobody has to wake it). */
const NAP_MS = 0.1;
/** After this long without a dispatch a helper sleeps until notified: an idle pool costs no CPU. */
const NAPPING_MS = 5;

/**
 * Waits until the pool's sequence slot (`ctrl`, kernel-thread.ts CONTROL) moves past `seen` and
 * returns its new value. Waking a sleeping thread costs the notifying thread dearly on a busy
 * machine (measured: about 0.5 ms a dispatch at load 4 on 2 cores, the woken thread taking the
 * notifier's core), so a helper first watches the slot, then naps in short timed waits that end
 * by themselves, and only then sleeps counted in SLEEPERS, the one state signalDispatch notifies.
 */
export function awaitDispatch(ctrl: Int32Array, seen: number): number {
  const start = performance.now();
  while (Atomics.load(ctrl, CONTROL.SEQ) === seen && performance.now() - start < WATCH_MS);
  while (Atomics.load(ctrl, CONTROL.SEQ) === seen && performance.now() - start < NAPPING_MS)
    Atomics.wait(ctrl, CONTROL.SEQ, seen, NAP_MS);
  if (Atomics.load(ctrl, CONTROL.SEQ) === seen) {
    // Counted before the slot is compared again (inside wait): a dispatch that the count misses
    // has already moved the slot, so the wait returns at once.
    Atomics.add(ctrl, CONTROL.SLEEPERS, 1);
    Atomics.wait(ctrl, CONTROL.SEQ, seen);
    Atomics.sub(ctrl, CONTROL.SLEEPERS, 1);
  }
  return Atomics.load(ctrl, CONTROL.SEQ);
}

/** Announces a dispatch to the helpers (awaitDispatch), notifying only where one sleeps. */
export function signalDispatch(ctrl: Int32Array): void {
  Atomics.add(ctrl, CONTROL.SEQ, 1);
  if (Atomics.load(ctrl, CONTROL.SLEEPERS) > 0) Atomics.notify(ctrl, CONTROL.SEQ);
}
