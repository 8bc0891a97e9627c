import { setFlagsFromString } from "node:v8";
import { Worker } from "node:worker_threads";
import wabtInit from "wabt";
import { compileWasm } from "../src/common/wasm-runtime.js";

/** Independent accumulators: enough chains of fused multiply-adds to cover their latency twice over. */
const CHAINS = 12;
const ITERATIONS = 20_000_000;

/**
 * A loop of CHAINS independent f32x4.relaxed_madd chains (128-bit WebAssembly's widest FMA), each
 * step 8 flops; its result is returned so nothing is optimized away.
 */
function peakText(): string {
  const locals = Array.from({ length: CHAINS }, (_, i) => `(local $a${i} v128)`).join(" ");
  const steps = Array.from(
    { length: CHAINS },
    (_, i) => `(local.set $a${i} (f32x4.relaxed_madd (local.get $x) (local.get $y) (local.get $a${i})))`,
  ).join("\n        ");
  const sum = Array.from({ length: CHAINS }, (_, i) => `(local.get $a${i})`).reduce(
    (a, b) => `(f32x4.add ${a} ${b})`,
  );
  return `(module
  (func (export "peak") (param $n i32) (result f32)
    (local $x v128) (local $y v128) ${locals}
    (local.set $x (f32x4.splat (f32.const 0.999999)))
    (local.set $y (f32x4.splat (f32.const 0.000001)))
    (loop $steps
        ${steps}
      (br_if $steps (i32.ne (local.tee $n (i32.sub (local.get $n) (i32.const 1))) (i32.const 0))))
    (f32x4.extract_lane 0 ${sum})))`;
}

/**
 * The f32 flop/s `threads` threads reach together running 128-bit relaxed fused multiply-adds from
 * registers (no memory traffic): the ceiling any WebAssembly matmul tile here can approach. Best of
 * three runs, all threads started together.
 */
export async function fmaPeak(threads: number): Promise<number> {
  // Process-wide, so the workers instantiate the module too (as src/common/built-wasm.ts does).
  setFlagsFromString("--experimental-wasm-relaxed-simd");
  const wabt = await wabtInit();
  const features = { simd: true, relaxed_simd: true };
  const parsed = wabt.parseWat("fma-peak.wat", peakText(), features);
  const { buffer } = parsed.toBinary({});
  parsed.destroy();
  const module = compileWasm(buffer);
  if (module === undefined) throw new Error("this runtime has no relaxed WebAssembly SIMD");
  const code = `const { workerData, parentPort } = require("node:worker_threads");
const { module, n, go } = workerData;
const { peak } = new WebAssembly.Instance(module).exports;
peak(1000);
Atomics.add(go, 1, 1);
Atomics.notify(go, 1);
Atomics.wait(go, 0, 0);
parentPort.postMessage(peak(n));`;
  let best = 0;
  for (let trial = 0; trial < 3; trial++) {
    const go = new Int32Array(new SharedArrayBuffer(8));
    const workers = Array.from(
      { length: threads },
      () => new Worker(code, { eval: true, workerData: { module, n: ITERATIONS, go } }),
    );
    const done = workers.map((w) => new Promise((resolve) => w.once("message", resolve)));
    while (Atomics.load(go, 1) < threads) await new Promise((resolve) => setTimeout(resolve, 5));
    const t0 = performance.now();
    Atomics.store(go, 0, 1);
    Atomics.notify(go, 0);
    await Promise.all(done);
    best = Math.max(best, (threads * ITERATIONS * CHAINS * 8) / ((performance.now() - t0) / 1000));
    await Promise.all(workers.map((w) => w.terminate()));
  }
  return best;
}
