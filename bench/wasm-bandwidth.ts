import { Worker } from "node:worker_threads";
import wabtInit from "wabt";
import { compileWasm, type WasmModule, wasmApi } from "../src/common/wasm-runtime.js";
import { compileSimdTile } from "../src/engine/kernels/matmul/tile-module.js";
import { type Bandwidth, processIdle } from "./memory-bandwidth.js";

/**
 * WebAssembly read bandwidth: threads that stream their own shares of one shared WebAssembly memory
 * (well past the caches), all started together; a pass's bandwidth is every thread's bytes over the
 * time from the start to the last thread's end, as memory-bandwidth.ts's memcmp passes. Readers:
 * - `sum4` / `sum8`: f32x4 loads into 4 / 8 accumulators by f32x4.add, 64 / 128 bytes a step, one stream;
 * - `rows4`: four streams a share apart by four, 16 bytes from each a step (four row-major rows);
 * - `tile-m1`: the engine's matmul tile (matmul/matmul-tile.wat's `quads`) at one input row, the
 *   share read as row-quads weights of K columns: the batch-1 decode's matmul alone, with no
 *   dispatch around it, so the read bandwidth the engine's own kernel reaches on these threads;
 * - `quads1` / `quads2`: the tile's one-row block written here over one / two adjacent groups of
 *   four rows at once (two: eight rows, two streams 16K bytes apart, in flight), the same
 *   operations on each output; `quads2far`: two groups half the share apart (two distant streams);
 *   `far98k` / `far393k`: quads2far within units of 64 / 256 rows, a unit's two halves at once;
 * - `ahead1k` / `ahead4k`: quads1 that also loads 4 bytes 1 KiB / 4 KiB on each step, a touch to
 *   start that cache line early (wasm has no prefetch instruction);
 * - `tile-units`: the tile at one row as the pool splits a batch-1 matmul, in units of 64 rows
 *   (one JavaScript call each), thread t taking units t, t + threads, ... of all the threads'
 *   shares: the engine's access pattern and calls without its dispatch (the pool claims units from
 *   a counter, which on equal threads comes to about this).
 */

const PAGE = 65536;
const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/** A one-stream reader of `accs` accumulators, 16·accs bytes a step; returns a lane so nothing is dropped. */
function sumText(accs: number): string {
  const locals = Array.from({ length: accs }, (_, i) => `(local $a${i} v128)`).join(" ");
  const steps = Array.from(
    { length: accs },
    (_, i) => `(local.set $a${i} (f32x4.add (local.get $a${i}) (v128.load offset=${16 * i} (local.get $p))))`,
  ).join("\n      ");
  const sum = Array.from({ length: accs }, (_, i) => `(local.get $a${i})`).reduce(
    (a, b) => `(f32x4.add ${a} ${b})`,
  );
  return `(func (export "sum${accs}") (param $p i32) (param $bytes i32) (result f32)
    (local $end i32) ${locals}
    (local.set $end (i32.add (local.get $p) (local.get $bytes)))
    (loop $step
      ${steps}
      (br_if $step (i32.lt_u (local.tee $p (i32.add (local.get $p) (i32.const ${16 * accs}))) (local.get $end))))
    (f32x4.extract_lane 0 ${sum}))`;
}

/** Four streams a quarter of the share apart, 16 bytes from each a step. */
const ROWS4 = `(func (export "rows4") (param $p i32) (param $bytes i32) (result f32)
    (local $q i32) (local $end i32) (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local.set $q (i32.shr_u (local.get $bytes) (i32.const 2)))
    (local.set $end (i32.add (local.get $p) (local.get $q)))
    (loop $step
      (local.set $a0 (f32x4.add (local.get $a0) (v128.load (local.get $p))))
      (local.set $a1 (f32x4.add (local.get $a1) (v128.load (i32.add (local.get $p) (local.get $q)))))
      (local.set $a2 (f32x4.add (local.get $a2) (v128.load (i32.add (local.get $p) (i32.shl (local.get $q) (i32.const 1))))))
      (local.set $a3 (f32x4.add (local.get $a3) (v128.load (i32.add (local.get $p) (i32.mul (local.get $q) (i32.const 3))))))
      (br_if $step (i32.lt_u (local.tee $p (i32.add (local.get $p) (i32.const 16))) (local.get $end))))
    (f32x4.extract_lane 0 (f32x4.add (f32x4.add (local.get $a0) (local.get $a1)) (f32x4.add (local.get $a2) (local.get $a3)))))`;

/**
 * The tile's one-row block over `groups` groups of four row-quads rows at once (4·groups
 * accumulators, the input vector loaded once for all): each output's operations as in the tile.
 */
function quadsText(groups: number, ahead = 0): string {
  const accs = Array.from({ length: 4 * groups }, (_, i) => i);
  const locals = accs.map((i) => `(local $a${i} v128)`).join(" ");
  const zero = accs.map((i) => `(local.set $a${i} (v128.const i64x2 0 0))`).join(" ");
  const steps = accs
    .map((i) => {
      const at = `(i32.add (local.get $p) (i32.mul (local.get $groupBytes) (i32.const ${i >> 2})))`;
      return `(local.set $a${i} (f32x4.relaxed_madd (local.get $xv) (v128.load offset=${16 * (i & 3)} ${at}) (local.get $a${i})))`;
    })
    .join("\n        ");
  const stores = accs
    .map(
      (i) => `(f32.store offset=${4 * i} (local.get $o) (f32.add
        (f32.add (f32x4.extract_lane 0 (local.get $a${i})) (f32x4.extract_lane 1 (local.get $a${i})))
        (f32.add (f32x4.extract_lane 2 (local.get $a${i})) (f32x4.extract_lane 3 (local.get $a${i})))))`,
    )
    .join("\n      ");
  // With `ahead`, each step also loads 4 bytes `ahead` bytes on (into a sum stored and then
  // overwritten), the cache line it starts then in flight early: a prefetch wasm lacks.
  const touch =
    ahead > 0
      ? `(local.set $sink (i32.xor (local.get $sink) (i32.load offset=${ahead} (local.get $p))))`
      : "";
  const name = ahead > 0 ? `quads${groups}ahead${ahead}` : `quads${groups}`;
  return `(func (export "${name}") (param $K i32) (param $x i32) (param $w i32) (param $o i32) (param $G i32)
    (local $groupBytes i32) (local $g i32) (local $p i32) (local $xa i32) (local $xe i32) (local $sink i32) (local $xv v128) ${locals}
    (local.set $groupBytes (i32.shl (local.get $K) (i32.const 4)))
    (local.set $xe (i32.add (local.get $x) (i32.shl (local.get $K) (i32.const 2))))
    (loop $groups
      ${zero}
      (local.set $p (local.get $w))
      (local.set $xa (local.get $x))
      (loop $k
        (local.set $xv (v128.load (local.get $xa)))
        ${touch}
        ${steps}
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (br_if $k (i32.lt_u (local.tee $xa (i32.add (local.get $xa) (i32.const 16))) (local.get $xe))))
      (i32.store (local.get $o) (local.get $sink))
      ${stores}
      (local.set $w (i32.add (local.get $w) (i32.mul (local.get $groupBytes) (i32.const ${groups}))))
      (local.set $o (i32.add (local.get $o) (i32.const ${16 * groups})))
      (br_if $groups (i32.lt_u (local.tee $g (i32.add (local.get $g) (i32.const ${groups}))) (local.get $G)))))`;
}

/** quads2's two groups taken `far` bytes apart (two streams far apart), G/2 groups from each. */
const QUADS2_FAR = quadsText(2)
  .replace('(export "quads2")', '(export "quads2far")')
  .replace("(param $G i32)", "(param $G i32) (param $far i32)")
  .replaceAll("(i32.mul (local.get $groupBytes) (i32.const 1))", "(local.get $far)")
  .replace("(i32.mul (local.get $groupBytes) (i32.const 2))", "(local.get $groupBytes)");

async function readersModule(): Promise<WasmModule> {
  const wabt = await wabtInit();
  const text = `(module (import "env" "memory" (memory 1 65536 shared))
  ${sumText(4)}
  ${sumText(8)}
  ${ROWS4}
  ${quadsText(1)}
  ${quadsText(2)}
  ${QUADS2_FAR}
  ${quadsText(1, 1024)}
  ${quadsText(1, 4096)})`;
  const parsed = wabt.parseWat("readers.wat", text, { simd: true, threads: true, relaxed_simd: true });
  const { buffer } = parsed.toBinary({});
  parsed.destroy();
  const module = compileWasm(buffer);
  if (module === undefined) throw new Error("this runtime has no WebAssembly SIMD");
  return module;
}

/** The readers, in the order the worker's \`run\` lists them. */
export const WASM_READERS = [
  "sum4",
  "sum8",
  "rows4",
  "tile-m1",
  "quads1",
  "quads2",
  "tile-units",
  "ahead1k",
  "ahead4k",
  "quads2far",
  "far98k",
  "far393k",
] as const;
export type WasmReader = (typeof WASM_READERS)[number];

const WORKER = `const { workerData } = require("node:worker_threads");
const { readers, tile, memory, sync, base, share, K, x, o, t: thread, threads } = workerData;
const r = new WebAssembly.Instance(readers, { env: { memory } }).exports;
const t = new WebAssembly.Instance(tile, { env: { memory } }).exports;
const run = [
  () => r.sum4(base, share),
  () => r.sum8(base, share),
  () => r.rows4(base, share),
  () => t.quads(K, 1, x, base, o, share / (16 * K), 4, -1, -1),
  () => r.quads1(K, x, base, o, share / (16 * K)),
  () => r.quads2(K, x, base, o, share / (16 * K)),
  () => {
    const unitBytes = 64 * K * 4;
    const units = (threads * share) / unitBytes;
    for (let u = thread; u < units; u += threads) t.quads(K, 1, x, u * unitBytes, o, 16, 4, -1, -1);
  },
  () => r.quads1ahead1024(K, x, base, o, share / (16 * K)),
  () => r.quads1ahead4096(K, x, base, o, share / (16 * K)),
  () => r.quads2far(K, x, base, o, share / (16 * K), share / 2),
  ...[64, 256].map((rows) => () => {
    for (let u = 0; u < share; u += rows * K * 4) r.quads2far(K, x, base + u, o, rows / 4, rows * K * 2);
  }),
];
for (let pass = 1; ; pass++) {
  Atomics.add(sync, 1, 1);
  Atomics.notify(sync, 1);
  Atomics.wait(sync, 0, pass - 1);
  const which = Atomics.load(sync, 3);
  if (which < 0) break;
  run[which]();
  Atomics.add(sync, 2, 1);
  Atomics.notify(sync, 2);
}`;

/** `threads` reader threads over one shared memory of about `mb` MB, kept for several readings. */
export class WasmReaders {
  /** Bytes each thread reads a pass: whole pages and whole units of 256 rows of K floats. */
  readonly share: number;
  private pass = 0;
  private constructor(
    readonly threads: number,
    private readonly sync: Int32Array,
    private readonly workers: Worker[],
    share: number,
  ) {
    this.share = share;
  }

  static async start(threads: number, mb = 256, K = 768): Promise<WasmReaders> {
    const api = wasmApi;
    const tile = compileSimdTile(true);
    if (api === undefined || tile === undefined)
      throw new Error("this runtime has no relaxed WebAssembly SIMD");
    const readers = await readersModule();
    const unit = (1024 * K * PAGE) / gcd(1024 * K, PAGE);
    const share = Math.floor((mb * 1e6) / threads / unit) * unit;
    const xBytes = Math.ceil((K * 4) / PAGE) * PAGE;
    // Each thread's tile output: one float per weight row.
    const outBytes = Math.ceil(share / K / PAGE) * PAGE;
    const pages = (threads * (share + outBytes) + xBytes) / PAGE;
    const memory = new api.Memory({ initial: pages, maximum: pages, shared: true });
    // Every page written (so the reads are of real pages), as small floats so the sums stay finite.
    new Float32Array(memory.buffer).fill(0.001);
    const x = threads * share;
    // Slots: 0 the pass the threads may start, 1 threads ready, 2 threads done, 3 the reader (-1: stop).
    const sync = new Int32Array(new SharedArrayBuffer(16));
    const workerData = { readers, tile, memory, sync, share, K, x };
    const workers = Array.from(
      { length: threads },
      (_, t) =>
        new Worker(WORKER, {
          eval: true,
          workerData: { ...workerData, base: t * share, o: x + xBytes + t * outBytes, t, threads },
        }),
    );
    const started = new WasmReaders(threads, sync, workers, share);
    // Warm-up: every reader compiled, every page faulted in.
    for (let i = 0; i < WASM_READERS.length; i++) await started.runPass(i);
    return started;
  }

  /** One pass of reader `which` (an index into WASM_READERS), -1 to stop the threads; bytes/s. */
  private async runPass(which: number): Promise<number> {
    const { sync, threads } = this;
    const pass = ++this.pass;
    while (Atomics.load(sync, 1) < pass * threads) await new Promise((resolve) => setTimeout(resolve, 1));
    Atomics.store(sync, 3, which);
    const t0 = performance.now();
    Atomics.store(sync, 0, pass);
    Atomics.notify(sync, 0);
    if (which < 0) return 0;
    // Waits on the done count here (the threads are on other cores): a timer would add its delay.
    for (let done = Atomics.load(sync, 2); done < pass * threads; done = Atomics.load(sync, 2))
      Atomics.wait(sync, 2, done);
    return (threads * this.share) / ((performance.now() - t0) / 1000);
  }

  /** `passes` passes of `reader` once the process is idle (processIdle), as a Bandwidth reading. */
  async measure(reader: WasmReader, passes = 9): Promise<Bandwidth> {
    const { idleAfterMs, idle } = await processIdle();
    const which = WASM_READERS.indexOf(reader);
    const got: number[] = [];
    for (let p = 0; p < passes; p++) got.push(await this.runPass(which));
    return { peak: Math.max(...got), passes: got, idleAfterMs, idle };
  }

  async close(): Promise<void> {
    await this.runPass(-1);
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}
