/**
 * What a token mixer keeps for a sequence while it decodes: one closed union, as vLLM's
 * `kv_cache_interface.py` frozen specs. Per-token kinds live in paged blocks; per-sequence kinds
 * are one fixed-size slot from admission to finish. A layer may keep several (MLA with DSA keeps
 * its latent and its indexer keys; KDA its recurrent state and three convolution tails).
 */
export type StateSpec = PerTokenState | PerSequenceState;

/** Keys and values of every position, all attended. */
export interface FullAttentionState {
  readonly kind: "full";
  readonly numKvHeads: number;
  /** Key head size. */
  readonly headDim: number;
  /** Value head size. */
  readonly vHeadDim: number;
}

/** Keys and values of the last `window` positions only, kept as a ring of blocks. */
export interface SlidingWindowState extends Omit<FullAttentionState, "kind"> {
  readonly kind: "sliding-window";
  /** Positions a query sees, itself included. */
  readonly window: number;
}

/** Keys and values of every position, a query attending only the last `window` of them. */
export interface SlidingMaskState extends Omit<SlidingWindowState, "kind"> {
  readonly kind: "sliding-mask";
}

/** Multi-head latent attention's row per token: the normalized latent and the shared rotary key. */
export interface LatentState {
  readonly kind: "latent";
  /** kv_lora_rank. */
  readonly latentDim: number;
  /** qk_rope_head_dim. */
  readonly ropeDim: number;
}

/** DeepSeek sparse attention's indexer key per token. */
export interface IndexerKeysState {
  readonly kind: "indexer-keys";
  readonly headDim: number;
}

/**
 * Rows pooled each from `ratio` consecutive positions (DeepSeek-V4's compressed keys and its
 * indexer's compressed keys): row w stands for positions w*ratio .. (w+1)*ratio - 1 and is written
 * when the last of them runs, so a sequence of n tokens holds floor(n / ratio) rows.
 */
export interface CompressedState {
  readonly kind: "compressed";
  /** Floats in one row. */
  readonly width: number;
  /** Positions pooled into one row. */
  readonly ratio: number;
}

/** A linear-attention state per sequence: numHeads matrices of keyDim x valueDim. */
export interface RecurrentState {
  readonly kind: "recurrent-state";
  readonly numHeads: number;
  readonly keyDim: number;
  readonly valueDim: number;
}

/** The last kernel - 1 inputs of a causal convolution over `channels`, per sequence. */
export interface ConvTailState {
  readonly kind: "conv-tail";
  readonly channels: number;
  readonly kernel: number;
}

export type AttentionState = FullAttentionState | SlidingWindowState | SlidingMaskState;
export type PerTokenState = AttentionState | LatentState | IndexerKeysState | CompressedState;
export type PerSequenceState = RecurrentState | ConvTailState;

/** What one layer keeps, by the name its mixer reads the storage under ({} for nothing). */
export type LayerStates = Readonly<Record<string, StateSpec>>;

/**
 * How the engine keeps sliding-window layers: "window-sized" keeps only the window (plus the
 * tokens in flight) as a ring of blocks; "full" keeps every position and masks to the window.
 * Full-attention layers keep every position in both.
 */
export type KvLayout = "window-sized" | "full";

export const KV_LAYOUT_NAMES: readonly KvLayout[] = ["window-sized", "full"];

export function isPerToken(spec: StateSpec): spec is PerTokenState {
  return spec.kind !== "recurrent-state" && spec.kind !== "conv-tail";
}

/** Float32 values one token takes in a per-token state (a compressed row shared by `ratio` tokens). */
export function floatsPerToken(spec: PerTokenState): number {
  return spec.kind === "compressed" ? spec.width / spec.ratio : floatsPerSlot(spec);
}

/** Float32 values one slot of a per-token state's blocks holds (a position's, or a compressed row's). */
export function floatsPerSlot(spec: PerTokenState): number {
  switch (spec.kind) {
    case "full":
    case "sliding-window":
    case "sliding-mask":
      return spec.numKvHeads * (spec.headDim + spec.vHeadDim);
    case "latent":
      return spec.latentDim + spec.ropeDim;
    case "indexer-keys":
      return spec.headDim;
    case "compressed":
      return spec.width;
  }
}

/** Float32 values one sequence's per-sequence state takes. */
export function floatsPerSequence(spec: PerSequenceState): number {
  switch (spec.kind) {
    case "recurrent-state":
      return spec.numHeads * spec.keyDim * spec.valueDim;
    case "conv-tail":
      return spec.channels * (spec.kernel - 1);
  }
}

/**
 * The spec as the engine keeps it under `layout`: a sliding window becomes a sliding mask over
 * full storage in the "full" layout; everything else is kept as asked.
 */
export function underLayout(spec: StateSpec, layout: KvLayout): StateSpec {
  return spec.kind === "sliding-window" && layout === "full" ? { ...spec, kind: "sliding-mask" } : spec;
}

/** Float32 values per token summed over every layer's per-token states (its KV footprint). */
export function kvFloatsPerToken(layers: readonly LayerStates[]): number {
  let total = 0;
  for (const states of layers)
    for (const spec of Object.values(states)) if (isPerToken(spec)) total += floatsPerToken(spec);
  return total;
}
