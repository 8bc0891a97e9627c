import { Worker } from "node:worker_threads";

/**
 * Native read bandwidth of `threads` threads reading at once: each memcmps its own two equal
 * 128 MiB buffers four times, all started together; best of three (bytes/s over the whole run).
 */
export async function memoryBandwidth(threads: number): Promise<number> {
  const n = 128 << 20;
  const reps = 4;
  const code = `const { workerData, parentPort } = require("node:worker_threads");
const { n, reps, go } = workerData;
const a = Buffer.alloc(n, 7);
const b = Buffer.alloc(n, 7);
Atomics.add(go, 1, 1);
Atomics.notify(go, 1);
Atomics.wait(go, 0, 0);
for (let i = 0; i < reps; i++) a.compare(b);
parentPort.postMessage("done");`;
  let best = 0;
  for (let trial = 0; trial < 3; trial++) {
    const go = new Int32Array(new SharedArrayBuffer(8));
    const workers = Array.from(
      { length: threads },
      () => new Worker(code, { eval: true, workerData: { n, reps, go } }),
    );
    const done = workers.map((w) => new Promise((resolve) => w.once("message", resolve)));
    while (Atomics.load(go, 1) < threads) await new Promise((resolve) => setTimeout(resolve, 5));
    const t0 = performance.now();
    Atomics.store(go, 0, 1);
    Atomics.notify(go, 0);
    await Promise.all(done);
    best = Math.max(best, (threads * reps * 2 * n) / ((performance.now() - t0) / 1000));
    await Promise.all(workers.map((w) => w.terminate()));
  }
  return best;
}
