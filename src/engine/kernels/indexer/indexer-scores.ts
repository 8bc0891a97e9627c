import { instantiateWasm, type WasmUnsharedMemory, wasmApi } from "../../../common/wasm-runtime.js";
import { compileKernel } from "../wasm-kernels.js";

/**
 * One query's DSA indexer scores over `count` cached keys: for position p (its key the `d` values
 * at keys[offsets[p]]), scores[p] = Σ_h weights[h] · ReLU(q_h · key_p) with q_h the h-th row of d
 * values of `q`, each dot accumulated in f64 in ascending feature order and the heads added in
 * ascending order (a head whose dot is not positive adds nothing). `scores` is zeroed first.
 * The plain reference: the WebAssembly kernel (indexer-scores.wat) must give its bits.
 */
export function indexerScores(
  q: Float32Array,
  weights: Float64Array,
  d: number,
  keys: Float32Array,
  offsets: Int32Array,
  count: number,
  scores: Float64Array,
): void {
  scores.fill(0, 0, count);
  const heads = weights.length;
  for (let s = 0; s < count; s++) {
    const base = offsets[s] as number;
    let score = 0;
    for (let h = 0; h < heads; h++) {
      let dot = 0;
      for (let i = 0; i < d; i++) dot += (q[h * d + i] as number) * (keys[base + i] as number);
      if (dot > 0) score += (weights[h] as number) * dot;
    }
    scores[s] = score;
  }
}

interface ScoresExports {
  scores(q: number, pairs: number, d: number, w: number, k: number, count: number, s: number): void;
}

const PAGE = 65536;

/**
 * indexerScores through indexer-scores.wat, in an instance with its own memory (the indexer
 * scores on the calling thread). `load` copies a sequence's keys in once, run by run (consecutive
 * offsets `d` apart are one copy); then each query of the step scores a prefix of them: its f64
 * query interleaved by head pair and its weights go in, its scores come out.
 */
export class IndexerScoresSimd {
  private loaded = 0;
  private d = 0;

  private constructor(
    private readonly kernel: ScoresExports,
    private readonly memory: WasmUnsharedMemory,
  ) {}

  /** An instance, or undefined where WebAssembly SIMD is unavailable. */
  static create(): IndexerScoresSimd | undefined {
    const module = compileKernel("indexer/indexer-scores");
    if (module === undefined || wasmApi === undefined) return undefined;
    const memory = new wasmApi.Memory({ initial: 1, maximum: 65536 });
    return new IndexerScoresSimd(instantiateWasm(module, memory) as ScoresExports, memory);
  }

  /** Copies the keys of `d` values at keys[offsets[p]] for p < count in, replacing those loaded before. */
  load(keys: Float32Array, offsets: Int32Array, count: number, d: number): void {
    // Keys [count + 1][d] f32 from byte 0: the kernel may read one row past the last it scores.
    this.reserve(4 * (count + 1) * d);
    const K = new Float32Array(this.memory.buffer, 0, (count + 1) * d);
    for (let s = 0; s < count; ) {
      const start = offsets[s] as number;
      let run = 1;
      while (s + run < count && offsets[s + run] === start + run * d) run++;
      K.set(keys.subarray(start, start + run * d), s * d);
      s += run;
    }
    this.loaded = count;
    this.d = d;
  }

  /** indexerScores of query `q` over the first `count` loaded keys (count at most those loaded). */
  scores(q: Float32Array, weights: Float64Array, count: number, scores: Float64Array): void {
    const d = this.d;
    if (count > this.loaded) throw new RangeError(`${count} keys scored, ${this.loaded} loaded`);
    const heads = weights.length;
    const pairs = (heads + 1) >> 1;
    // After the keys: f64 query pairs [d][pairs][2], f64 weights [2 pairs], f64 scores [count].
    const qOff = (4 * (this.loaded + 1) * d + 15) & ~15;
    const wOff = qOff + 16 * pairs * d;
    const sOff = wOff + 16 * pairs;
    this.reserve(sOff + 8 * count);
    const F = new Float64Array(this.memory.buffer, qOff, (sOff - qOff) / 8 + count);
    // A missing odd head has query and weight zero: its dot is never positive, so it adds nothing.
    F.fill(0);
    const w = (wOff - qOff) / 8;
    for (let h = 0; h < heads; h++) {
      // Head h is lane h % 2 of pair h / 2.
      for (let i = 0; i < d; i++) F[i * 2 * pairs + h] = q[h * d + i] as number;
      F[w + h] = weights[h] as number;
    }
    this.kernel.scores(qOff, pairs, d, wOff, 0, count, sOff);
    const first = (sOff - qOff) / 8;
    scores.set(F.subarray(first, first + count));
  }

  /** Grows the memory to at least `bytes` (growing keeps its contents). */
  private reserve(bytes: number): void {
    const have = this.memory.buffer.byteLength;
    if (bytes > have) this.memory.grow(Math.ceil((bytes - have) / PAGE));
  }
}
