import { BringupError } from "../../common/errors.js";
import type { LayerKvCache } from "../cache/kv-cache.js";
import type { ModelConfig } from "../config.js";
import { embed } from "../kernels/embedding.js";
import type { MatmulPool } from "../kernels/pool.js";
import { rmsNorm } from "../kernels/rmsnorm.js";
import { Rope } from "../kernels/rope.js";
import { checkMoeSpec, route } from "./moe.js";
import type { DenseMlpWeights, LayerWeights, ModelWeights } from "./weights.js";

/** One step's worth of tokens from any number of sequences, flattened. */
export interface ForwardBatch {
  readonly tokens: ArrayLike<number>;
  readonly positions: ArrayLike<number>;
  /** For each token, its sequence's block table in each cache group (indexed by group). */
  readonly blockTables: readonly (readonly (readonly number[])[])[];
  /** Indices of the tokens whose next-token logits are wanted, in output order. */
  readonly logitRows: readonly number[];
}

/**
 * A decoder-only transformer (llama / qwen / mixtral family) over a paged KV cache. `forward` runs
 * every token of a step through every layer; each token's arithmetic depends only on its own
 * sequence, so a batch gives the same bits as each of its sequences alone.
 */
export class Transformer {
  private readonly ropes: Rope[];

  constructor(
    readonly config: ModelConfig,
    readonly weights: ModelWeights,
    private readonly pool: MatmulPool,
    /** One cache per layer. */
    readonly caches: readonly LayerKvCache[],
    /** The cache group of each layer (index into a token's blockTables). */
    readonly layerGroups: readonly number[],
  ) {
    if (weights.layers.length !== config.layers.length || caches.length !== config.layers.length) {
      throw new BringupError(
        "MODEL_WEIGHTS_MISMATCH",
        `config has ${config.layers.length} layers but weights/caches have ${weights.layers.length}/${caches.length}.`,
      );
    }
    if (config.moe !== undefined) checkMoeSpec(config.moe);
    this.ropes = config.layers.map(
      (l) =>
        new Rope(
          l.attention.headDim,
          l.attention.partialRotaryFactor,
          l.attention.ropeTheta,
          config.ropeScaling,
        ),
    );
  }

  /** Runs one step and returns logits [logitRows.length, vocabSize]. */
  forward(batch: ForwardBatch): Float32Array {
    const T = batch.tokens.length;
    const H = this.config.hiddenSize;
    const x = new Float32Array(T * H);
    embed(this.weights.embed, batch.tokens, x);
    const h = new Float32Array(T * H);
    for (let l = 0; l < this.weights.layers.length; l++) {
      const lw = this.weights.layers[l] as LayerWeights;
      rmsNorm(x, T, H, lw.inputNorm, this.config.rmsNormEps, h);
      const attn = this.attention(l, lw, h, batch);
      addInto(x, attn);
      rmsNorm(x, T, H, lw.postAttentionNorm, this.config.rmsNormEps, h);
      const mlp = lw.mlp.kind === "dense" ? this.denseMlp(lw.mlp.weights, h, T) : this.moe(lw, h, T);
      addInto(x, mlp);
    }
    const R = batch.logitRows.length;
    const last = new Float32Array(R * H);
    for (let r = 0; r < R; r++) {
      const t = batch.logitRows[r] as number;
      last.set(x.subarray(t * H, (t + 1) * H), r * H);
    }
    rmsNorm(last, R, H, this.weights.finalNorm, this.config.rmsNormEps);
    const logits = new Float32Array(R * this.weights.lmHead.rows);
    if (R > 0) this.pool.matmul(last, R, this.weights.lmHead, logits);
    return logits;
  }

  private attention(l: number, lw: LayerWeights, h: Float32Array, batch: ForwardBatch): Float32Array {
    const spec = (this.config.layers[l] as (typeof this.config.layers)[number]).attention;
    const aw = lw.attention;
    const T = batch.tokens.length;
    const { numHeads, numKvHeads, headDim, vHeadDim } = spec;
    const q = new Float32Array(T * numHeads * headDim);
    const k = new Float32Array(T * numKvHeads * headDim);
    const v = new Float32Array(T * numKvHeads * vHeadDim);
    this.pool.matmulMany(h, T, [aw.q, aw.k, aw.v], [q, k, v]);
    if (aw.qBias) addBias(q, aw.qBias, T);
    if (aw.kBias) addBias(k, aw.kBias, T);
    if (aw.vBias) addBias(v, aw.vBias, T);
    if (spec.valueScale !== undefined && spec.valueScale !== 1) scaleInto(v, spec.valueScale);
    if (aw.qNorm) rmsNorm(q, T * numHeads, headDim, aw.qNorm, this.config.rmsNormEps);
    if (aw.kNorm) rmsNorm(k, T * numKvHeads, headDim, aw.kNorm, this.config.rmsNormEps);
    const rope = this.ropes[l] as Rope;
    const cache = this.caches[l] as LayerKvCache;
    const group = this.layerGroups[l] as number;
    for (let t = 0; t < T; t++) {
      const pos = batch.positions[t] as number;
      rope.apply(q, t * numHeads * headDim, numHeads, headDim, pos);
      rope.apply(k, t * numKvHeads * headDim, numKvHeads, headDim, pos);
      const blocks = (batch.blockTables[t] as readonly (readonly number[])[])[group] as readonly number[];
      cache.write(cache.slot(blocks, pos), k, t * numKvHeads * headDim, v, t * numKvHeads * vHeadDim);
    }
    // Each distinct block table once; tokens point at their sequence's table.
    const meta = new Int32Array(3 * T);
    const offsets = new Map<readonly number[], number>();
    const flat: number[] = [];
    for (let t = 0; t < T; t++) {
      const blocks = (batch.blockTables[t] as readonly (readonly number[])[])[group] as readonly number[];
      let offset = offsets.get(blocks);
      if (offset === undefined) {
        offset = flat.length;
        offsets.set(blocks, offset);
        flat.push(...blocks);
      }
      const pos = batch.positions[t] as number;
      meta[3 * t] = pos;
      meta[3 * t + 1] = cache.spec.firstVisible(pos);
      meta[3 * t + 2] = offset;
    }
    const out = new Float32Array(T * numHeads * vHeadDim);
    this.pool.attention({
      meta,
      tables: Int32Array.from(flat),
      blockSize: cache.spec.blockSize,
      ringBlocks: cache.spec.ringBlocks,
      q,
      out,
      keys: cache.keys,
      values: cache.values,
      numHeads,
      numKvHeads,
      headDim,
      vHeadDim,
      scale: 1 / Math.sqrt(headDim),
      sinks: aw.sinks ?? null,
    });
    const o = new Float32Array(T * this.config.hiddenSize);
    this.pool.matmul(out, T, aw.o, o);
    return o;
  }

  private denseMlp(w: DenseMlpWeights, h: Float32Array, T: number): Float32Array {
    const I = w.gate.rows;
    const gate = new Float32Array(T * I);
    const up = new Float32Array(T * I);
    this.pool.matmulMany(h, T, [w.gate, w.up], [gate, up]);
    this.pool.swiglu(gate, up, T * I);
    const out = new Float32Array(T * this.config.hiddenSize);
    this.pool.matmul(gate, T, w.down, out);
    return out;
  }

  private moe(lw: LayerWeights, h: Float32Array, T: number): Float32Array {
    if (lw.mlp.kind !== "moe" || this.config.moe === undefined)
      throw new Error("unreachable: moe layer without moe weights");
    const spec = this.config.moe;
    const w = lw.mlp.weights;
    const H = this.config.hiddenSize;
    const logits = new Float32Array(T * spec.numExperts);
    this.pool.matmul(h, T, w.router, logits);
    const routes = Array.from({ length: T }, (_, t) =>
      route(logits, t * spec.numExperts, spec, w.routerBias),
    );
    // Run each expert once over the tokens routed to it, keeping each (token, rank) output apart so
    // the final mix adds them in rank order whatever the batch.
    const perRank = new Float32Array(T * spec.topK * H);
    for (let e = 0; e < spec.numExperts; e++) {
      const members: number[] = [];
      for (let t = 0; t < T; t++) {
        const ex = (routes[t] as { experts: Int32Array }).experts;
        for (let r = 0; r < spec.topK; r++) if (ex[r] === e) members.push(t * spec.topK + r);
      }
      if (members.length === 0) continue;
      const gathered = new Float32Array(members.length * H);
      members.forEach((m, i) => {
        const t = Math.floor(m / spec.topK);
        gathered.set(h.subarray(t * H, (t + 1) * H), i * H);
      });
      const y = this.denseMlp(w.experts[e] as DenseMlpWeights, gathered, members.length);
      members.forEach((m, i) => {
        perRank.set(y.subarray(i * H, (i + 1) * H), m * H);
      });
    }
    const out = w.shared ? this.denseMlp(w.shared, h, T) : new Float32Array(T * H);
    for (let t = 0; t < T; t++) {
      const { weights } = routes[t] as { weights: Float64Array };
      for (let i = 0; i < H; i++) {
        let s = 0;
        for (let r = 0; r < spec.topK; r++)
          s += (weights[r] as number) * (perRank[(t * spec.topK + r) * H + i] as number);
        out[t * H + i] = (out[t * H + i] as number) + s;
      }
    }
    return out;
  }
}

function addInto(x: Float32Array, y: Float32Array): void {
  for (let i = 0; i < x.length; i++) x[i] = (x[i] as number) + (y[i] as number);
}

function scaleInto(x: Float32Array, factor: number): void {
  for (let i = 0; i < x.length; i++) x[i] = (x[i] as number) * factor;
}

function addBias(x: Float32Array, bias: Float32Array, rows: number): void {
  const n = bias.length;
  for (let r = 0; r < rows; r++)
    for (let i = 0; i < n; i++) x[r * n + i] = (x[r * n + i] as number) + (bias[i] as number);
}
