import type { LayerKvCache } from "../cache/kv-cache.js";
import type { StateSlots } from "../cache/state-slots.js";
import type { MatmulPool } from "../kernels/pool.js";

/** One step's worth of tokens from any number of sequences, flattened sequence by sequence. */
export interface ForwardBatch {
  readonly tokens: ArrayLike<number>;
  readonly positions: ArrayLike<number>;
  /** For each token, its sequence's block table in each cache group (indexed by group). */
  readonly blockTables: readonly (readonly (readonly number[])[])[];
  /**
   * Each sequence's run of tokens in this step, in batch order: its tokens are `first` ..
   * `first + count - 1` (consecutive positions), and `slot` is its state slot (-1 without one).
   */
  readonly sequences: readonly SequenceRun[];
  /** Indices of the tokens whose next-token logits are wanted, in output order. */
  readonly logitRows: readonly number[];
}

export interface SequenceRun {
  readonly first: number;
  readonly count: number;
  readonly slot: number;
}

/**
 * What a layer's token mixer keeps for a sequence while it decodes, as vLLM's KV cache specs and
 * Mamba state spec declare it:
 * - "paged": per-token storage in blocks (keys of numKvHeads x headDim and values of numKvHeads x
 *   vHeadDim per token: attention K/V, or a latent in `headDim` with vHeadDim 0); `attention`
 *   says which positions a query reads, so the planner can keep a sliding layer's window as a ring;
 * - "slot": one fixed-size state per sequence (a recurrent matrix, a convolution tail), `floats`
 *   float32 values, zeroed by the layer when a sequence starts at position 0;
 * - "none": nothing (the layer reads only the current tokens).
 */
export type LayerState =
  | {
      readonly kind: "paged";
      readonly attention: "full" | "sliding";
      /** Sliding layers: positions a query sees, itself included. */
      readonly window?: number;
      readonly numKvHeads: number;
      readonly headDim: number;
      readonly vHeadDim: number;
    }
  | { readonly kind: "slot"; readonly floats: number }
  | { readonly kind: "none" };

/** The storage the engine gives a layer for one step, matching its LayerState. */
export interface LayerStorage {
  /** "paged": the layer's cache, read through its own spec (its mask). */
  readonly cache?: LayerKvCache;
  /** "paged": the cache group whose block tables hold this layer's positions. */
  readonly group?: number;
  /** "slot": every sequence's state; a run's `slot` indexes it. */
  readonly slots?: StateSlots;
}

/** What every block's forward reads besides its input: the batch, the kernels and the switches. */
export interface ForwardContext {
  readonly batch: ForwardBatch;
  readonly pool: MatmulPool;
  /** The model's switches as this engine runs them (each declared by the architecture). */
  readonly switches: ReadonlyMap<string, string>;
}

/** A layer's token mixer: attention of some kind, or a recurrent mixer. */
export interface TokenMixer {
  /** What the layer keeps under its switches' defaults. */
  readonly state: LayerState;
  /** What it keeps under `switches`, for a mixer whose storage depends on one; else `state`. */
  stateUnder?(switches: ReadonlyMap<string, string>): LayerState;
  /** Maps normalized inputs h [T, hidden] to the mixer's output [T, hidden]. */
  forward(h: Float32Array, ctx: ForwardContext, storage: LayerStorage): Float32Array;
  /** Tensors whose zeroing silences the block exactly (its output projections). */
  readonly outputTensors: readonly string[];
}

/** A layer's feed-forward part: a dense MLP or a mixture of experts. */
export interface FeedForward {
  forward(h: Float32Array, ctx: ForwardContext): Float32Array;
  readonly outputTensors: readonly string[];
}

/**
 * How a sub-layer (mixer or feed-forward) joins the residual stream X, which is [T, streams x
 * hidden]: a plain pre-norm residual (one stream: X += f(norm(X))) or mHC's mixing of several.
 */
export interface Connection {
  /** Runs `block` on this connection's input from X and writes the result back into X. */
  apply(X: Float32Array, T: number, block: (h: Float32Array) => Float32Array): void;
  /** The name of the RMSNorm weight applied to the block's input. */
  readonly normTensor: string;
  /**
   * Tensor values under which the connection is an ordinary residual (X += block(norm(X)), up to a
   * scale the norm removes): how a constructed model (tiny/copy-circuit-placement.ts) sets it.
   */
  readonly plainResidualTensors?: ReadonlyMap<string, Float32Array>;
}

/** How the residual stream starts from the embeddings and ends before the final norm. */
export interface ResidualStream {
  /** Parallel copies of the hidden state the stream holds (1: an ordinary residual). */
  readonly streams: number;
  /** [T, hidden] embeddings to the stream [T, streams x hidden]. */
  expand(x: Float32Array, T: number): Float32Array;
  /** Rows of the stream [R, streams x hidden] to hidden states [R, hidden]. */
  collapse(X: Float32Array, R: number): Float32Array;
  /** Tensor values under which the streams stay copies of one ordinary residual (see Connection). */
  readonly plainResidualTensors?: ReadonlyMap<string, Float32Array>;
}

export interface DecoderLayer {
  readonly mixer: TokenMixer;
  readonly mixerConnection: Connection;
  readonly ffn: FeedForward;
  readonly ffnConnection: Connection;
}

/** A switch a model's blocks read at run time (for example which KDA prefill form to run). */
export interface ModelSwitch {
  readonly name: string;
  readonly values: readonly string[];
  readonly default: string;
  readonly description: string;
}
