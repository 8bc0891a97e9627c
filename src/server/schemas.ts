import { z } from "zod";

/** Most logprob alternatives a request may ask for (vLLM's default max_logprobs). */
export const MAX_LOGPROBS = 20;

/** Most choices (n, best_of) one request may ask for. */
export const MAX_CHOICES = 16;

const tokenIds = z.array(z.int().min(0), { error: "expected a list of token ids (integers >= 0)" });
const count = (max: number) => z.int().min(0).max(max).nullish();
/**
 * A 64-bit seed: the body parser keeps integers beyond 2^53 as bigints; one outside int64 is
 * refused, as vLLM's protocol does (vllm/entrypoints/openai/protocol.py: seed ge/le _LONG_INFO).
 */
const seed = z
  .union([z.int(), z.bigint()], { error: "expected an integer" })
  .refine((v) => BigInt.asIntN(64, BigInt(v)) === BigInt(v), {
    error: `must be a 64-bit integer, from ${-(2n ** 63n)} to ${2n ** 63n - 1n}`,
  })
  .nullish();

/** A field this server refuses unless it is absent or holds its neutral value (named in the 400). */
const refused = (why: string) =>
  z.union([z.null(), z.undefined()], { error: `is not supported: ${why}` }).optional();
const onlyValue = <T extends string | number | boolean>(value: T, why: string) =>
  z.literal(value, { error: `is not supported except ${JSON.stringify(value)}: ${why}` }).nullish();

const STRUCTURED =
  "structured output (guided decoding) has no well-kept constrained-decoding library for Node this engine can use; leave it out";

/** Fields vLLM takes on both routes (OpenAI's plus vLLM's sampling extras). Unknown fields are refused. */
const common = {
  model: z.string().nullish(),
  max_tokens: z.int().min(0).nullish(),
  n: z.int().min(1).max(MAX_CHOICES).nullish(),
  best_of: z.int().min(1).max(MAX_CHOICES).nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  top_k: z.int().nullish(),
  min_p: z.number().nullish(),
  seed,
  presence_penalty: z.number().nullish(),
  frequency_penalty: z.number().nullish(),
  repetition_penalty: z.number().nullish(),
  logit_bias: z.record(z.string(), z.number()).nullish(),
  stop: z
    .union([z.string(), z.array(z.string())], { error: "expected a string or a list of strings" })
    .nullish(),
  stop_token_ids: tokenIds.nullish(),
  include_stop_str_in_output: z.boolean().nullish(),
  ignore_eos: z.boolean().nullish(),
  min_tokens: z.int().min(0).nullish(),
  allowed_token_ids: tokenIds.nullish(),
  bad_words: z.array(z.string()).nullish(),
  truncate_prompt_tokens: z.int().min(1).nullish(),
  return_tokens_as_token_ids: z.boolean().nullish(),
  stream: z.boolean().nullish(),
  stream_options: z
    .strictObject({
      include_usage: z.boolean().nullish(),
      continuous_usage_stats: z.boolean().nullish(),
    })
    .nullish(),
  prompt_logprobs: count(MAX_LOGPROBS),
  add_special_tokens: z.boolean().nullish(),
  user: z.string().nullish(),
  request_id: z.string().min(1).max(128).nullish(),
  skip_special_tokens: onlyValue(true, "special tokens are always left out of the text"),
  spaces_between_special_tokens: onlyValue(true, "special tokens are always left out of the text"),
  use_beam_search: onlyValue(false, "beam search is not implemented; use best_of"),
  length_penalty: onlyValue(1, "it only applies to beam search, which is not implemented"),
  priority: onlyValue(0, "the scheduler serves requests in arrival order"),
  guided_json: refused(STRUCTURED),
  guided_regex: refused(STRUCTURED),
  guided_choice: refused(STRUCTURED),
  guided_grammar: refused(STRUCTURED),
  guided_decoding_backend: refused(STRUCTURED),
  guided_whitespace_pattern: refused(STRUCTURED),
  structured_outputs: refused(STRUCTURED),
  logits_processors: refused("custom logits processors cannot be loaded"),
  cache_salt: refused("there is no prefix cache to salt"),
  kv_transfer_params: refused("there is no disaggregated prefill"),
  vllm_xargs: refused("no extension reads extra arguments"),
};

const responseFormat = z
  .strictObject({
    type: z.literal("text", {
      error: `only the text response format is supported (${STRUCTURED})`,
    }),
  })
  .nullish();

export const completionRequestSchema = z.strictObject({
  ...common,
  prompt: z.union([z.string(), tokenIds, z.array(z.string()), z.array(tokenIds)], {
    error: "expected a string, a list of token ids, or a list of either",
  }),
  echo: z.boolean().nullish(),
  logprobs: count(MAX_LOGPROBS),
  suffix: refused("send the whole prompt instead"),
  response_format: responseFormat,
  prompt_embeds: refused("prompts are text or token ids"),
});
export type CompletionRequest = z.infer<typeof completionRequestSchema>;

const textPart = z.object({
  type: z.literal("text", { error: "only text content parts are supported" }),
  text: z.string(),
});

export const chatMessageSchema = z.object({
  role: z.string(),
  content: z
    .union([z.string(), z.array(textPart), z.null()], { error: "expected a string or a list of text parts" })
    .optional(),
});

export const chatRequestSchema = z.strictObject({
  ...common,
  messages: z.array(chatMessageSchema).min(1, { error: "send at least one message" }),
  max_completion_tokens: z.int().min(0).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: count(MAX_LOGPROBS),
  add_generation_prompt: z.boolean().nullish(),
  tools: z
    .array(z.unknown())
    .max(0, { error: "tool calling is not supported by this server; leave tools out" })
    .nullish(),
  tool_choice: onlyValue("none", "tool calling is not supported by this server"),
  parallel_tool_calls: refused("tool calling is not supported by this server"),
  response_format: responseFormat,
  echo: z.boolean().nullish(),
  continue_final_message: onlyValue(false, "the template always starts a new message"),
  chat_template: z.string().nullish(),
  chat_template_kwargs: refused("the chat template gets only the messages and add_generation_prompt"),
  documents: refused("the chat template gets only the messages; put documents in the messages"),
  reasoning_effort: refused("the reference engine has no reasoning switch"),
  mm_processor_kwargs: refused("the reference engine takes text only"),
});
export type ChatRequest = z.infer<typeof chatRequestSchema>;
export type ChatRequestMessage = z.infer<typeof chatMessageSchema>;

/** vLLM's /tokenize: a prompt, or chat messages to render through the template first. */
export const tokenizeRequestSchema = z.union(
  [
    z.object({
      model: z.string().nullish(),
      prompt: z.string(),
      add_special_tokens: z.boolean().nullish(),
      return_token_strs: z.boolean().nullish(),
    }),
    z.object({
      model: z.string().nullish(),
      messages: z.array(chatMessageSchema).min(1, { error: "send at least one message" }),
      add_generation_prompt: z.boolean().nullish(),
      add_special_tokens: z.boolean().nullish(),
      chat_template: z.string().nullish(),
      return_token_strs: z.boolean().nullish(),
    }),
  ],
  { error: "send either `prompt` (a string) or `messages` (a list of chat messages)" },
);
export type TokenizeRequest = z.infer<typeof tokenizeRequestSchema>;

export const detokenizeRequestSchema = z.object({ model: z.string().nullish(), tokens: tokenIds });
export type DetokenizeRequest = z.infer<typeof detokenizeRequestSchema>;
