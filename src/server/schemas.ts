import { z } from "zod";

/** Most logprob alternatives a request may ask for (vLLM's default max_logprobs). */
export const MAX_LOGPROBS = 20;

const tokenIds = z.array(z.int().min(0), { error: "expected a list of token ids (integers >= 0)" });
const count = (max: number) => z.int().min(0).max(max).nullish();

/** Fields that change nothing here unless left at their neutral value; anything else is refused. */
const neutral = {
  presence_penalty: z
    .literal(0, { error: "is not supported by the reference engine; leave it out or send 0" })
    .nullish(),
  frequency_penalty: z
    .literal(0, { error: "is not supported by the reference engine; leave it out or send 0" })
    .nullish(),
  repetition_penalty: z
    .literal(1, { error: "is not supported by the reference engine; leave it out or send 1" })
    .nullish(),
  logit_bias: z
    .record(z.string(), z.number())
    .refine((v) => Object.keys(v).length === 0, {
      error: "is not supported by the reference engine; leave it out",
    })
    .nullish(),
  n: z
    .literal(1, {
      error: "must be 1: this server returns one choice per request; send several requests instead",
    })
    .nullish(),
};

/** Sampling and streaming fields shared by completions and chat completions (OpenAI's plus vLLM's extras). */
const common = {
  model: z.string().nullish(),
  max_tokens: z.int().min(0).nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  top_k: z.int().nullish(),
  seed: z.int().nullish(),
  stop: z
    .union([z.string(), z.array(z.string())], { error: "expected a string or a list of strings" })
    .nullish(),
  stop_token_ids: tokenIds.nullish(),
  ignore_eos: z.boolean().nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
  prompt_logprobs: count(MAX_LOGPROBS),
  user: z.string().nullish(),
  ...neutral,
};

export const completionRequestSchema = z.object({
  ...common,
  prompt: z.union([z.string(), tokenIds, z.array(z.string()), z.array(tokenIds)], {
    error: "expected a string, a list of token ids, or a one-element list of either",
  }),
  echo: z.boolean().nullish(),
  logprobs: count(MAX_LOGPROBS),
  best_of: z.literal(1, { error: "must be 1: this server returns one choice per request" }).nullish(),
  suffix: z.null({ error: "is not supported; send the whole prompt instead" }).optional(),
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

export const chatRequestSchema = z.object({
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
  response_format: z
    .object({ type: z.literal("text", { error: "only the text response format is supported" }) })
    .nullish(),
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
    }),
    z.object({
      model: z.string().nullish(),
      messages: z.array(chatMessageSchema).min(1, { error: "send at least one message" }),
      add_generation_prompt: z.boolean().nullish(),
      add_special_tokens: z.boolean().nullish(),
    }),
  ],
  { error: "send either `prompt` (a string) or `messages` (a list of chat messages)" },
);
export type TokenizeRequest = z.infer<typeof tokenizeRequestSchema>;

export const detokenizeRequestSchema = z.object({ model: z.string().nullish(), tokens: tokenIds });
export type DetokenizeRequest = z.infer<typeof detokenizeRequestSchema>;
