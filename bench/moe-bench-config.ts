/**
 * The model of the MoE benches (moe-expert-paths.ts, int8-process-speeds.ts): MiniMax-M3's
 * reference config at a size whose experts are far beyond the caches, so both measure one model.
 */

/** The sizes moe-expert-paths.ts's flags default to, and int8-process-speeds.ts runs. */
export const MOE_BENCH_SIZES = { hidden: 1024, intermediate: 1024, experts: 32, topK: 8, layers: 2 };

export type MoeBenchSizes = typeof MOE_BENCH_SIZES;

/** MiniMax-M3's reference config at `sizes`: heads of 64, four query heads per KV head. */
export function moeBenchConfig(sizes: MoeBenchSizes): Record<string, unknown> {
  return {
    model_type: "minimax_m3",
    vocab_size: 512,
    hidden_size: sizes.hidden,
    num_hidden_layers: sizes.layers,
    num_attention_heads: 8,
    num_key_value_heads: 2,
    head_dim: 64,
    rope_theta: 150000,
    attention_bias: true,
    layer_types: Array.from({ length: sizes.layers }, (_, i) =>
      i % 2 === 0 ? "sliding_attention" : "full_attention",
    ),
    sliding_window: 128,
    num_local_experts: sizes.experts,
    num_experts_per_tok: sizes.topK,
    intermediate_size: sizes.intermediate,
    swiglu_limit: 7.0,
    rms_norm_eps: 1.0e-5,
    max_position_embeddings: 4096,
  };
}
