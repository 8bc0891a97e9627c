/**
 * The reference engine's public face: load a model (from a directory or generated tiny), run it
 * with continuous batching, and tokenize / detokenize / template chats.
 *
 * Typical use (what src/server does):
 *
 *   const model = await loadModel(dir);  // or: await createTinyModel(findTinySize("small")!)
 *   const engine = new Engine(model, { maxNumSeqs: 64, maxModelLen: 4096 });
 *   const ids = engine.tokenizer.encode(engine.tokenizer.applyChatTemplate(messages), { addSpecialTokens: false });
 *   const detok = engine.tokenizer.createDetokenizer();
 *   for await (const out of engine.submit({ promptTokenIds: ids, maxTokens: 64, sampling: { temperature: 0 } }, signal)) {
 *     if (out.token) text += detok.push(out.token.tokenId);
 *     if (out.finishReason) text += detok.flush();   // "stop" | "length" | "abort"
 *   }
 *   engine.stats();                                 // running, waiting, kvBlocksUsed/Total, kvTokenCapacity, blockSize
 *
 * Models: each family is one file under models/ (an Architecture: it parses config.json, builds a
 * CausalLM from blocks/ over the checkpoint's own tensor names, and makes its tiny models), found
 * from config.json's `architectures`, then `model_type`, by models/registry.ts, which imports the
 * family on demand. Blocks: token mixers (GQA and latent attention, KDA), feed-forward parts
 * (SwiGLU MLP, routed MoE) and the residual's connections (pre-norm, mHC). `loadModel(dir)` takes
 * a directory and nothing else; a tensor no block reads is refused by name. Each mixer
 * declares what it keeps per sequence (LayerStates: named specs from one closed union, StateSpec:
 * full, sliding window or mask, latent, indexer keys, recurrent state, convolution tail), computed
 * from its spec alone, so an architecture gives them from the parsed config without building the
 * model; the planner (cache/capacity.ts) groups per-token states that place positions alike into
 * block groups and per-sequence states into one pool of slots, splits one byte budget between
 * them, and each layer gets back storage of the kind it asked for (LayerStorage: paged K/V, paged
 * rows, slots). A sequence holds its slot from admission to finish, abort or preemption
 * (recomputed after). The engine core is in parts (core/): sequence, scheduler, cache manager
 * (blocks and slots, fork copies), model runner; engine.ts joins them. A model's switches (ModelSwitch, for example
 * KDA's prefill form) are set per engine with `switches`.
 *
 * KV layout: sliding-window layers keep only their window as a ring of blocks by default
 * (`kvLayout: "window-sized"`), or every position with a sliding mask (`kvLayout: "full"`); the
 * two give the same bits. Layers that allocate alike share block tables (a cache group); the KV
 * budget is split between groups in proportion to one max_model_len sequence's needs, and
 * kvCapacityRatio(config, "window-sized", "full", blockSize, context) gives the theoretical gain.
 *   await engine.close();
 *
 * Sampling (SamplingParams) follows vLLM: temperature below 1e-5 is greedy; top_k, top_p, min_p;
 * presence, frequency and repetition penalties, logit_bias, allowed_token_ids and bad_words (token
 * sequences) act on a copy of the logits, so reported logprobs stay the model's own; seeds use all
 * 64 bits (SplitMix64). GenerateRequest.minTokens keeps stop tokens out until that many tokens.
 * A generated token carries its logprob and rank only where the request set `logprobs` (0: the
 * token's own); unasked, none is computed, and scoredToken(token) throws LOGPROB_NOT_COMPUTED.
 * `submit(request, signal, onScheduled)` tells onScheduled how long the request queued.
 * `submitShared(request, seeds, signal, onScheduled)` runs one sequence per seed (n, best_of) over a
 * single prefill of the prompt: when it is computed, the first sequence takes its KV blocks and
 * state slots and the others get copies (or recompute it later, when no blocks are free), so each
 * stream equals a separate request with its seed bit for bit; stats().promptTokensTotal counts the
 * prompt once.
 *
 * `submit` throws BringupError synchronously for a request that can never run; codes:
 * PROMPT_EMPTY, TOKEN_OUT_OF_RANGE, INVALID_MAX_TOKENS, CONTEXT_TOO_LONG, KV_CAPACITY_EXCEEDED,
 * INVALID_LOGPROBS, INVALID_SAMPLING_PARAMS, ENGINE_CLOSED. Requests that fit but find the KV cache
 * full wait in the queue (or preempt later arrivals) instead of failing.
 *
 * Numerics: every token's arithmetic depends only on its own sequence, so greedy results do not
 * change with batch composition, chunked prefill or preemption. Matmuls run on all cores (worker
 * threads over SharedArrayBuffers) through a WebAssembly SIMD tile that reads weights in place from
 * one shared WebAssembly memory (kernels/wasm-arena.ts: it only grows); `simd: false` or
 * BRINGUP_ENGINE_SIMD=0 selects the plain JavaScript kernel, equal bit for bit to the scalar reference.
 * Where relaxed SIMD is available (on Node 20 the engine turns V8's flag for it on at run time),
 * the tile's steps are fused multiply-adds; BRINGUP_ENGINE_FMA=0 forces the unfused tile. Either
 * tile is within f32 accumulation error of the reference (K·2^-24·Σ|x·w|) and batch-invariant bit
 * for bit. SwiGLU runs a SIMD kernel under the same switch (f64 with an exp within about 1e-14,
 * kernels/swiglu/swiglu.wat), split between the threads. MXFP4 weights are decoded by a SIMD kernel
 * (kernels/matmul/mxfp4-decode.wat, by table) a chunk of rows at a time into scratch for the tile,
 * or, at one input row, straight into the multiply-adds of kernels/matmul/mxfp4-rows.wat
 * (KernelSwitches.mxfp4ScratchTokens), with the bits of unpacking them to f32 rows in
 * JavaScript, which BRINGUP_ENGINE_MXFP4=unpacked selects instead (kernels/switches.ts reads every
 * switch), or per engine the `mxfp4` switch that every model holding MXFP4 weights has. Its third
 * value, int8 (BRINGUP_ENGINE_MXFP4=int8), multiplies on relaxed integer dot products over the input
 * quantized per block of 32 (kernels/matmul/mxfp4-int8.ts states its error; not the same bits).
 * Block-scaled FP8 weights are decoded the same two ways (kernels/matmul/fp8-rows.wat).
 * Attention runs the same way: a SIMD kernel over tiles of a prefill's queries (pairs of f64 in the
 * reference's order) and a plain tiled kernel under the same switch; both equal
 * kernels/paged-attention/paged-attention.ts bit for bit.
 *
 * KV layouts (`kvLayout`): "window-sized" keeps each sliding-window layer's window as a ring of
 * blocks; "full" keeps every token in every layer and masks the window. The byte budget is split
 * between cache groups so each holds the same number of max_model_len sequences (cache/capacity.ts).
 */

export type { Architecture, ModelConfig, TinyModelOptions } from "./architecture.js";
export type { DsaNames, DsaSpec } from "./blocks/attention/dsa-indexer.js";
export {
  DSA_SWITCHES,
  DsaIndexer,
  dsaNames,
  hadamardFp8,
  topKPositions,
} from "./blocks/attention/dsa-indexer.js";
export type { AttentionNames, AttentionSpec, AttentionWeights } from "./blocks/attention/gqa-attention.js";
export { attentionNames, GqaAttention, gqaStates } from "./blocks/attention/gqa-attention.js";
export type { MlaNames, MlaSpec, MlaWeights } from "./blocks/attention/mla-attention.js";
export {
  MLA_CACHE_SWITCH,
  MLA_SWITCHES,
  MlaAttention,
  mlaNames,
  mlaStates,
} from "./blocks/attention/mla-attention.js";
export type { KdaSpec } from "./blocks/linear-attention/kda-attention.js";
export { KDA_CHUNK, KDA_SWITCHES, KdaAttention, kdaStates } from "./blocks/linear-attention/kda-attention.js";
export type { ClampedMoeSpec } from "./blocks/mlp/clamped-swiglu-moe.js";
export { ClampedSwigluMoe } from "./blocks/mlp/clamped-swiglu-moe.js";
export type { MoeNames } from "./blocks/mlp/routed-moe.js";
export { RoutedMoe } from "./blocks/mlp/routed-moe.js";
export type { MoeSpec, Routing } from "./blocks/mlp/routing.js";
export { route, routeTopKThenSoftmax } from "./blocks/mlp/routing.js";
export type { MlpNames } from "./blocks/mlp/swiglu-mlp.js";
export { HF_MLP_NAMES, MIXTRAL_MLP_NAMES, SwigluMlp } from "./blocks/mlp/swiglu-mlp.js";
export type { MhcConfig } from "./blocks/residual/mhc.js";
export { MhcConnection, MhcResidual } from "./blocks/residual/mhc-connection.js";
export { PLAIN_RESIDUAL, PreNormConnection } from "./blocks/residual/pre-norm.js";
export type { BlockGroup, KvCachePlan, PlannedState, SlotPool, StatePool } from "./cache/capacity.js";
export {
  kvBytesPerSequence,
  kvCapacityRatio,
  kvTokenCapacity,
  planKvCache,
  splitKvBudget,
  unitBytes,
  unitsNeeded,
} from "./cache/capacity.js";
export { BlockPlacement, placementOf } from "./cache/placement.js";
export type {
  AttentionState,
  ConvTailState,
  FullAttentionState,
  IndexerKeysState,
  KvLayout,
  LatentState,
  LayerStates,
  PerSequenceState,
  PerTokenState,
  RecurrentState,
  SlidingMaskState,
  SlidingWindowState,
  StateSpec,
} from "./cache/state-spec.js";
export { floatsPerSequence, floatsPerToken, KV_LAYOUT_NAMES, kvFloatsPerToken } from "./cache/state-spec.js";
export type { StateStorage } from "./cache/storage.js";
export { LayerStorage, PagedKv, PagedRows, SequenceSlots } from "./cache/storage.js";
export type { EngineLimits, EngineOptions, EngineStats, KvGroupLimits } from "./engine.js";
export { Engine } from "./engine.js";
export type { YarnScaling } from "./kernels/rope.js";
export { clampedSwiglu } from "./kernels/swiglu/clamped-swiglu.js";
export type { ResolvedConfig } from "./loader/build-model.js";
export { buildModel, modelOfFiles } from "./loader/build-model.js";
export type { HostTensor } from "./loader/host-tensor.js";
export { loadModel } from "./loader/load-model.js";
export { WeightSource } from "./loader/weight-source.js";
export type { CausalLMParts } from "./model/causal-lm.js";
export { CausalLM } from "./model/causal-lm.js";
export type { LoadedModel } from "./model/loaded-model.js";
export type {
  Connection,
  DecoderLayer,
  FeedForward,
  ForwardBatch,
  ForwardContext,
  ForwardTap,
  ResidualStream,
  SequenceRun,
  TokenMixer,
} from "./model/model.js";
export type { ModelSwitch } from "./model/model-switch.js";
export type { DecoderConfig, DecoderShape, LayerSpec } from "./models/decoder.js";
export { embeddingAndHead, preNormDecoder } from "./models/decoder.js";
export type { DeepseekV3Config } from "./models/deepseek-v3.js";
export { parseDeepseekV3 } from "./models/deepseek-v3.js";
export { llamaArchitecture, parseLlamaConfig } from "./models/llama.js";
export { parseMimoConfig } from "./models/mimo.js";
export { findArchitecture } from "./models/registry.js";
export { OutputQueue } from "./output-queue.js";
export type {
  FinishReason,
  GeneratedToken,
  GenerateRequest,
  PromptLogprobs,
  ScoredToken,
  StepOutput,
} from "./request.js";
export { scoredToken } from "./request.js";
export type { SamplingParams, TokenLogprob } from "./sampler.js";
export { Rng } from "./tensor/random.js";
export type { Weight } from "./tensor/weight.js";
export type { CopySlots, TokenCodes } from "./tiny/copy-circuit.js";
export {
  codeEmbedding,
  codeLmHead,
  copyOutputCode,
  copySlots,
  inductionQueryKey,
  tokenCodes,
} from "./tiny/copy-circuit.js";
export type { CopyCircuitOptions } from "./tiny/copy-circuit-placement.js";
export { placeCopyCircuit } from "./tiny/copy-circuit-placement.js";
export { readCorpus, shippedCorpusDir } from "./tiny/corpus.js";
export type { TinyModelFiles, TinyTokenizer } from "./tiny/files.js";
export { countParameters, tinyModelFiles, tinyTokenizer } from "./tiny/files.js";
export type { TinyDtype, TinyOptions } from "./tiny/generate.js";
export { createTinyModel, generateTinyModel, TINY_DTYPES, tinyFilesToModel } from "./tiny/generate.js";
export { latentCopyHidden, placeLatentCopyCircuit } from "./tiny/latent-copy-circuit.js";
export type { TinyKit } from "./tiny/port-kit.js";
export { tinyKit } from "./tiny/port-kit.js";
export type { RetrievalOptions } from "./tiny/retrieval.js";
export { createRetrievalModel, generateRetrievalModel } from "./tiny/retrieval.js";
export type { TinySize } from "./tiny/sizes.js";
export { findTinySize, TINY_SIZES, tinyParameterCount } from "./tiny/sizes.js";
export { filled, nearestRivalGap, tensorSeed, unitCode } from "./tiny/weights.js";
export { writeTinyModel } from "./tiny/write.js";
export type { TrainedBpe } from "./tokenizer/bpe-train.js";
export { trainByteLevelBpe } from "./tokenizer/bpe-train.js";
export type { ChatMessage, ChatTemplateContext, ChatTemplateOptions } from "./tokenizer/tokenizer.js";
export { IncrementalDetokenizer, renderRequestTemplate, TextTokenizer } from "./tokenizer/tokenizer.js";
export type { TokenizerFiles } from "./tokenizer/tokenizer-files.js";
export { buildTokenizerFiles } from "./tokenizer/tokenizer-files.js";
