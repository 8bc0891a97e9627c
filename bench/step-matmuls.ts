import { MatmulPool } from "../src/engine/kernels/pool.js";
import { Rng } from "../src/engine/tensor/random.js";
import { tileLayout } from "../src/engine/tensor/row-quads.js";
import { shareArray, type Weight } from "../src/engine/tensor/weight.js";

/** The matmul shapes of a llama-style decoder (config.json's fields). */
export interface DecoderShapes {
  hidden_size: number;
  intermediate_size: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  head_dim: number;
  num_hidden_layers: number;
  vocab_size: number;
}

/** One dispatch of a step: weights multiplied by the same input in one pool call. */
interface Dispatch {
  weights: Weight[];
  x: Float32Array;
  outs: Float32Array[];
}

/** What a step that were only its matmuls reaches at some number of input rows. */
export interface StepMatmulRate {
  /** Matmul flop/s over the whole step (two per weight per input row). */
  flops: number;
  /** Tokens per second: input rows over the step's matmul time. */
  tokens: number;
  /** The same step's flop/s on one thread (the calling thread alone, no helpers to wake). */
  oneThreadFlops: number;
  /**
   * Tokens per second of the same step with layer 0's weights in every layer (about 28 MB for
   * bench-100m, 37 with the LM head: more than L2 holds, little enough for a server CPU's
   * last-level cache to keep between layers and steps): what the step would reach if the weights'
   * first read came from that cache rather than memory.
   */
  cachedTokens: number;
}

/**
 * A decode step's matmuls alone, as the engine dispatches a llama-style decoder's on its
 * MatmulPool: per layer q/k/v in one dispatch, o, gate/up in one dispatch, down; then the LM head.
 * Every layer has weights of its own (f32, random, in row quads in the shared memory as the
 * loader places them), so the step streams as many weight bytes from memory as the model's does.
 * Measured on the pool's threads, it is the ceiling of the engine's decode at that many streams:
 * the tokens a second if a step did nothing but its matmuls at the rate the tile reaches there
 * (no attention, norms, sampling or scheduling between dispatches).
 */
export class StepMatmuls {
  private readonly pool: MatmulPool;
  private readonly alone = new MatmulPool(1);
  private readonly layers: Weight[][][];
  private readonly lmHead: Weight;
  /** Matmul flops per input row: two per weight (the embedding is a lookup, attention left out). */
  readonly flopsPerToken: number;

  constructor(threads: number, shapes: DecoderShapes) {
    this.pool = new MatmulPool(threads);
    const H = shapes.hidden_size;
    const I = shapes.intermediate_size;
    const q = shapes.num_attention_heads * shapes.head_dim;
    const kv = shapes.num_key_value_heads * shapes.head_dim;
    // One set of random values copied into every weight: the values do not change the speed, and
    // drawing a whole model's would take seconds.
    const values = new Rng(1).fillNormal(new Float32Array(Math.max(I, q, shapes.vocab_size) * H), 0.05);
    const weight = (rows: number, cols: number): Weight => {
      const data = shareArray(values.subarray(0, rows * cols));
      return { dtype: "f32", rows, cols, data, ...tileLayout(data, rows, cols) };
    };
    this.layers = Array.from({ length: shapes.num_hidden_layers }, () => [
      [weight(q, H), weight(kv, H), weight(kv, H)],
      [weight(H, q)],
      [weight(I, H), weight(I, H)],
      [weight(H, I)],
    ]);
    this.lmHead = weight(shapes.vocab_size, H);
    const weights = this.layers.flat(2).concat(this.lmHead);
    this.flopsPerToken = 2 * weights.reduce((sum, w) => sum + w.rows * w.cols, 0);
  }

  /**
   * The step's matmuls at M input rows on the pool's threads and on one, and on the pool's threads
   * with one layer's weights for all, the best of `passes` steps each (after one untimed).
   */
  measure(M: number, passes = 5): StepMatmulRate {
    const rng = new Rng(2);
    const input = (cols: number) => rng.fillNormal(new Float32Array(M * cols), 1);
    const dispatch = (weights: Weight[]): Dispatch => ({
      weights,
      x: input(weights[0]?.cols as number),
      outs: weights.map((w) => new Float32Array(M * w.rows)),
    });
    const step = this.layers.flatMap((layer) => layer.map(dispatch)).concat(dispatch([this.lmHead]));
    const first = this.layers[0] as Weight[][];
    const cachedStep = this.layers.flatMap(() => first.map(dispatch)).concat(dispatch([this.lmHead]));
    const bestSeconds = (pool: MatmulPool, dispatches = step) => {
      let best = Number.POSITIVE_INFINITY;
      for (let pass = 0; pass <= passes; pass++) {
        const t0 = performance.now();
        for (const { weights, x, outs } of dispatches) pool.matmulMany(x, M, weights, outs);
        const seconds = (performance.now() - t0) / 1000;
        if (pass > 0) best = Math.min(best, seconds);
      }
      return best;
    };
    const seconds = bestSeconds(this.pool);
    const flops = M * this.flopsPerToken;
    return {
      flops: flops / seconds,
      tokens: M / seconds,
      oneThreadFlops: flops / bestSeconds(this.alone),
      cachedTokens: M / bestSeconds(this.pool, cachedStep),
    };
  }

  async close(): Promise<void> {
    await Promise.all([this.pool.close(), this.alone.close()]);
  }
}
