import type { LayerStates } from "../cache/state-spec.js";
import type { LayerStorage } from "../cache/storage.js";
import type { MatmulPool } from "../kernels/pool.js";
import type { ScratchHolder } from "./step-scratch.js";

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
 * What every block's forward reads besides its input: the batch, the kernels, the switches and,
 * when the step replays a plan, its scratch (take per-step temporaries with stepArray).
 */
export interface ForwardContext extends ScratchHolder {
  readonly batch: ForwardBatch;
  readonly pool: MatmulPool;
  /** The model's switches as this engine runs them (each declared by the architecture). */
  readonly switches: ReadonlyMap<string, string>;
  /** Sees the step's intermediate values (absent: nothing is copied or called). */
  readonly tap?: ForwardTap;
}

/**
 * Receives a copy of an intermediate value of one step, `rows` rows of the batch in batch order:
 * `embed` [T, hidden]; `layers.L.mixer` and `layers.L.ffn`, the residual stream [T, streams x
 * hidden] after layer L's mixer and after its feed-forward part; `logits` [logit rows, vocab].
 * How `bringup device blocks` dumps each layer's output for the device plugin's block checks.
 */
export type ForwardTap = (site: string, values: Float32Array, rows: number) => void;

/** A layer's token mixer: attention of some kind, or a recurrent mixer. */
export interface TokenMixer {
  /**
   * What the layer keeps per sequence when the model runs with `switches` (a missing switch takes
   * its default), by the name its forward reads the storage under; from the mixer's spec alone,
   * so an architecture computes it from the parsed config without building the model.
   */
  states(switches: ReadonlyMap<string, string>): LayerStates;
  /** Maps normalized inputs h [T, hidden] to the mixer's output [T, hidden], `storage` its states'. */
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
  /** Runs `block` on this connection's input from X and writes the result back into X (temporaries from `ctx`). */
  apply(X: Float32Array, T: number, block: (h: Float32Array) => Float32Array, ctx: ScratchHolder): void;
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
  /** [T, hidden] embeddings to the stream [T, streams x hidden] (a step's array from `ctx`). */
  expand(x: Float32Array, T: number, ctx: ScratchHolder): Float32Array;
  /** Rows of the stream [R, streams x hidden] to hidden states [R, hidden] (from `ctx`). */
  collapse(X: Float32Array, R: number, ctx: ScratchHolder): Float32Array;
  /** Tensor values under which the streams stay copies of one ordinary residual (see Connection). */
  readonly plainResidualTensors?: ReadonlyMap<string, Float32Array>;
}

export interface DecoderLayer {
  readonly mixer: TokenMixer;
  readonly mixerConnection: Connection;
  readonly ffn: FeedForward;
  readonly ffnConnection: Connection;
}

/** A step's logits and the residual stream of every token [T, streams x hidden] (a draft head's input). */
export interface StepResult {
  readonly logits: Float32Array;
  readonly streams: Float32Array;
}
