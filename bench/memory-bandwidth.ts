import { Worker } from "node:worker_threads";

/** Bytes each thread compares per pass: two equal buffers of this size, well past any cache. */
const BUFFER_BYTES = 64 << 20;
/** Compares of the two buffers per pass (a pass reads 2 * BUFFER_BYTES * COMPARES per thread). */
const COMPARES = 2;
const PASSES = 9;
/** The process counts as idle once its threads use under this share of one core over a window. */
const IDLE_SHARE = 0.05;
const IDLE_WINDOW_MS = 20;
/** Longest wait for the process to go idle before measuring anyway (the reading says so). */
const IDLE_WAIT_MAX_MS = 3000;

export interface Bandwidth {
  /** Bytes/s: the best pass, the peak read bandwidth of these threads. */
  peak: number;
  /** Bytes/s of every pass, in the order run. */
  passes: number[];
  /** How long the process took to go idle before the passes (ms). */
  idleAfterMs: number;
  /** Whether it went idle within IDLE_WAIT_MAX_MS. */
  idle: boolean;
}

/**
 * Waits until this process's threads (the engines' helpers and llama.cpp's ggml workers, which
 * spin for a while after a computation ends) use under IDLE_SHARE of a core over IDLE_WINDOW_MS:
 * measured while they spin, the passes (or the next arm of a bench) would share the cores with
 * them. Gives up after IDLE_WAIT_MAX_MS, saying so.
 */
export async function processIdle(): Promise<{ idleAfterMs: number; idle: boolean }> {
  const start = performance.now();
  for (;;) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await new Promise((resolve) => setTimeout(resolve, IDLE_WINDOW_MS));
    const { user, system } = process.cpuUsage(cpu0);
    const share = (user + system) / 1000 / (performance.now() - t0);
    const waited = performance.now() - start;
    if (share < IDLE_SHARE) return { idleAfterMs: waited, idle: true };
    if (waited > IDLE_WAIT_MAX_MS) return { idleAfterMs: waited, idle: false };
  }
}

/**
 * Native read bandwidth of `threads` threads reading at once, its peak over PASSES passes: each
 * thread memcmps its own two equal BUFFER_BYTES buffers COMPARES times a pass, all threads started
 * together; a pass's bandwidth is every thread's bytes over the time from the start to the last
 * thread's end. The passes run once the process is idle (processIdle) on threads that allocated
 * their buffers first; the best pass is the peak (on shared cores a pass that another process's
 * thread lands on reads less; each pass is still these threads' real bandwidth).
 */
export async function measureBandwidth(threads: number): Promise<Bandwidth> {
  const code = `const { workerData } = require("node:worker_threads");
const { n, compares, passes, sync } = workerData;
const a = Buffer.alloc(n, 7);
const b = Buffer.alloc(n, 7);
for (let pass = 1; pass <= passes; pass++) {
  Atomics.add(sync, 1, 1);
  Atomics.notify(sync, 1);
  Atomics.wait(sync, 0, pass - 1);
  for (let i = 0; i < compares; i++) a.compare(b);
  Atomics.add(sync, 2, 1);
  Atomics.notify(sync, 2);
}`;
  // Slots: 0 the pass the threads may start, 1 threads ready, 2 threads done.
  const sync = new Int32Array(new SharedArrayBuffer(12));
  const workers = Array.from(
    { length: threads },
    () =>
      new Worker(code, {
        eval: true,
        workerData: { n: BUFFER_BYTES, compares: COMPARES, passes: PASSES, sync },
      }),
  );
  const until = async (slot: number, value: number) => {
    while (Atomics.load(sync, slot) < value) await new Promise((resolve) => setTimeout(resolve, 1));
  };
  try {
    await until(1, threads);
    const { idleAfterMs, idle } = await processIdle();
    const passes: number[] = [];
    for (let pass = 1; pass <= PASSES; pass++) {
      await until(1, pass * threads);
      const t0 = performance.now();
      Atomics.store(sync, 0, pass);
      Atomics.notify(sync, 0);
      // Waits on the done count here (the threads are on other cores): a timer would add its delay.
      for (let done = Atomics.load(sync, 2); done < pass * threads; done = Atomics.load(sync, 2))
        Atomics.wait(sync, 2, done);
      const seconds = (performance.now() - t0) / 1000;
      passes.push((threads * COMPARES * 2 * BUFFER_BYTES) / seconds);
    }
    return { peak: Math.max(...passes), passes, idleAfterMs, idle };
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}

/** The peak of measureBandwidth, bytes/s. */
export async function memoryBandwidth(threads: number): Promise<number> {
  return (await measureBandwidth(threads)).peak;
}

/** A reading in one line: the peak, the passes' range, and how long the process took to go idle. */
export function describeBandwidth(b: Bandwidth): string {
  const gb = (x: number) => (x / 1e9).toFixed(1);
  const sorted = [...b.passes].sort((x, y) => x - y);
  const median = sorted[Math.floor(sorted.length / 2)] as number;
  const waited = b.idle
    ? `after ${b.idleAfterMs.toFixed(0)} ms for the process to go idle`
    : `the process still busy after ${b.idleAfterMs.toFixed(0)} ms`;
  return `peak ${gb(b.peak)} GB/s of ${b.passes.length} passes (min ${gb(sorted[0] as number)}, median ${gb(median)}), ${waited}`;
}
