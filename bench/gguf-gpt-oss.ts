/**
 * A gpt-oss-style checkpoint (MiniMax-M3's tiny kit: gpt-oss's config fields and tensor names,
 * experts in MXFP4 `*_blocks` / `*_scales`) written as a GGUF of llama.cpp's `gpt-oss`
 * architecture, its experts kept in GGML's MXFP4 type, the same codes and scales re-laid out as
 * llama.cpp's convert_hf_to_gguf.py does for gpt-oss:
 *
 * - nibbles: a gpt-oss block stores values 2j and 2j+1 in byte j (low nibble first); GGML's
 *   block_mxfp4 stores values j and j+16 in byte j, after the block's E8M0 scale byte;
 * - gate_up_proj, whose gate and linear rows interleave (even and odd), becomes ffn_gate_exps and
 *   ffn_up_exps, and its bias likewise.
 *
 * llama.cpp's gpt-oss wants two tensors the kit does not make: an output-projection bias (written
 * as zeros, which adds nothing) and sinks on every layer (the full-attention layers get -inf, whose
 * exp adds nothing to the softmax denominator). Its rotary embedding is NeoX-style, the kit's HF
 * rotate-half, so q and k are written as they are.
 */
import type { HostTensor, TinyModelFiles } from "../src/engine/index.js";
import { GGML_MXFP4_BLOCK_BYTES, type GgufTensor, gguf, ggufBpeTokenizer, writeGguf } from "./gguf-writer.js";

/**
 * Rows `first`, `first + step`, ... of stacked MXFP4 weights in gpt-oss's layout (blocks
 * [..., rows, groups, 16], scales [..., rows, groups]) in GGML's block_mxfp4 layout.
 */
export function ggmlMxfp4Rows(
  blocks: Uint8Array,
  scales: Uint8Array,
  groups: number,
  first = 0,
  step = 1,
): Uint8Array {
  const rows = scales.length / groups;
  const picked = Math.ceil((rows - first) / step);
  const out = new Uint8Array(picked * groups * GGML_MXFP4_BLOCK_BYTES);
  let o = 0;
  for (let r = first; r < rows; r += step) {
    for (let g = 0; g < groups; g++) {
      const block = r * groups + g;
      const src = block * 16;
      out[o] = scales[block] as number;
      // Value v's code is nibble v & 1 of source byte v >> 1.
      const code = (v: number) => ((blocks[src + (v >> 1)] as number) >> ((v & 1) * 4)) & 0xf;
      for (let j = 0; j < 16; j++) out[o + 1 + j] = code(j) | (code(j + 16) << 4);
      o += GGML_MXFP4_BLOCK_BYTES;
    }
  }
  return out;
}

/** Elements `first`, `first + step`, ... of each row of a [rows, cols] f32 tensor. */
export function strideColumns(data: Float32Array, cols: number, first: number, step: number): Float32Array {
  const rows = data.length / cols;
  const picked = Math.ceil((cols - first) / step);
  const out = new Float32Array(rows * picked);
  for (let r = 0; r < rows; r++)
    for (let c = 0; c < picked; c++) out[r * picked + c] = data[r * cols + first + c * step] as number;
  return out;
}

/** Writes `files` (a MiniMax-M3 kit checkpoint) as a llama.cpp `gpt-oss` GGUF at `path`. */
export async function writeGptOssGguf(files: TinyModelFiles, path: string): Promise<void> {
  const c = files.config as Record<string, number>;
  const H = c.hidden_size as number;
  const I = c.intermediate_size as number;
  const E = c.num_local_experts as number;
  const V = c.vocab_size as number;
  const heads = c.num_attention_heads as number;
  const kvHeads = c.num_key_value_heads as number;
  const headDim = c.head_dim as number;
  const layerTypes = files.config.layer_types as string[];
  if (layerTypes.some((t, i) => (t === "sliding_attention") !== (i % 2 === 0)))
    throw new Error(
      "llama.cpp's gpt-oss slides on even layers only; give layer_types that alternate from sliding",
    );
  const tensor = (name: string): HostTensor => {
    const t = files.tensors.get(name);
    if (t === undefined) throw new Error(`the checkpoint has no tensor ${name}`);
    return t;
  };
  const f32 = (name: string) => tensor(name).data as Float32Array;
  const u8 = (name: string) => tensor(name).data as Uint8Array;
  // HF [rows, cols] is ggml ne [cols, rows].
  const matrix = (to: string, from: string, rows: number, cols: number): GgufTensor => ({
    name: to,
    ne: [cols, rows],
    data: f32(from),
  });
  const tensors: GgufTensor[] = [matrix("token_embd.weight", "model.embed_tokens.weight", V, H)];
  for (let i = 0; i < layerTypes.length; i++) {
    const p = `model.layers.${i}`;
    const attn = `${p}.self_attn`;
    const experts = `${p}.mlp.experts`;
    const b = `blk.${i}`;
    const sinks =
      layerTypes[i] === "sliding_attention"
        ? f32(`${attn}.sinks`)
        : new Float32Array(heads).fill(Number.NEGATIVE_INFINITY);
    const gateUpBias = f32(`${experts}.gate_up_proj_bias`);
    const gateUp = (first: number) =>
      ggmlMxfp4Rows(
        u8(`${experts}.gate_up_proj_blocks`),
        u8(`${experts}.gate_up_proj_scales`),
        H / 32,
        first,
        2,
      );
    tensors.push(
      { name: `${b}.attn_norm.weight`, ne: [H], data: f32(`${p}.input_layernorm.weight`) },
      matrix(`${b}.attn_q.weight`, `${attn}.q_proj.weight`, heads * headDim, H),
      { name: `${b}.attn_q.bias`, ne: [heads * headDim], data: f32(`${attn}.q_proj.bias`) },
      matrix(`${b}.attn_k.weight`, `${attn}.k_proj.weight`, kvHeads * headDim, H),
      { name: `${b}.attn_k.bias`, ne: [kvHeads * headDim], data: f32(`${attn}.k_proj.bias`) },
      matrix(`${b}.attn_v.weight`, `${attn}.v_proj.weight`, kvHeads * headDim, H),
      { name: `${b}.attn_v.bias`, ne: [kvHeads * headDim], data: f32(`${attn}.v_proj.bias`) },
      matrix(`${b}.attn_output.weight`, `${attn}.o_proj.weight`, H, heads * headDim),
      { name: `${b}.attn_output.bias`, ne: [H], data: new Float32Array(H) },
      { name: `${b}.attn_sinks.weight`, ne: [heads], data: sinks },
      { name: `${b}.post_attention_norm.weight`, ne: [H], data: f32(`${p}.post_attention_layernorm.weight`) },
      matrix(`${b}.ffn_gate_inp.weight`, `${p}.mlp.router.weight`, E, H),
      { name: `${b}.ffn_gate_inp.bias`, ne: [E], data: f32(`${p}.mlp.router.bias`) },
      { name: `${b}.ffn_gate_exps.weight`, ne: [H, I, E], type: "mxfp4", data: gateUp(0) },
      { name: `${b}.ffn_gate_exps.bias`, ne: [I, E], data: strideColumns(gateUpBias, 2 * I, 0, 2) },
      { name: `${b}.ffn_up_exps.weight`, ne: [H, I, E], type: "mxfp4", data: gateUp(1) },
      { name: `${b}.ffn_up_exps.bias`, ne: [I, E], data: strideColumns(gateUpBias, 2 * I, 1, 2) },
      {
        name: `${b}.ffn_down_exps.weight`,
        ne: [I, H, E],
        type: "mxfp4",
        data: ggmlMxfp4Rows(u8(`${experts}.down_proj_blocks`), u8(`${experts}.down_proj_scales`), I / 32),
      },
      { name: `${b}.ffn_down_exps.bias`, ne: [H, E], data: f32(`${experts}.down_proj_bias`) },
    );
  }
  tensors.push(
    { name: "output_norm.weight", ne: [H], data: f32("model.norm.weight") },
    matrix("output.weight", "lm_head.weight", V, H),
  );
  await writeGguf(
    path,
    {
      "general.architecture": gguf.str("gpt-oss"),
      "general.name": gguf.str("minimax-m3-kit"),
      "gpt-oss.context_length": gguf.u32(c.max_position_embeddings as number),
      "gpt-oss.embedding_length": gguf.u32(H),
      "gpt-oss.block_count": gguf.u32(layerTypes.length),
      "gpt-oss.feed_forward_length": gguf.u32(I),
      "gpt-oss.expert_feed_forward_length": gguf.u32(I),
      "gpt-oss.expert_count": gguf.u32(E),
      "gpt-oss.expert_used_count": gguf.u32(c.num_experts_per_tok as number),
      "gpt-oss.attention.head_count": gguf.u32(heads),
      "gpt-oss.attention.head_count_kv": gguf.u32(kvHeads),
      "gpt-oss.attention.key_length": gguf.u32(headDim),
      "gpt-oss.attention.value_length": gguf.u32(headDim),
      "gpt-oss.attention.layer_norm_rms_epsilon": gguf.f32(c.rms_norm_eps as number),
      // llama.cpp takes even layers as sliding (its gpt-oss pattern of 2), as the kit's layer_types do.
      "gpt-oss.attention.sliding_window": gguf.u32(c.sliding_window as number),
      "gpt-oss.rope.dimension_count": gguf.u32(headDim),
      "gpt-oss.rope.freq_base": gguf.f32(c.rope_theta as number),
      ...ggufBpeTokenizer(files),
    },
    tensors,
  );
}
