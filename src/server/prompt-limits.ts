import type { TextTokenizer } from "../engine/index.js";
import { ApiError } from "./api-error.js";
import type { ServerContext } from "./context.js";

const longestTokens = new WeakMap<TextTokenizer, number>();

/** The most characters one token stands for: a text longer than limit x this is over the limit. */
function longestToken(tokenizer: TextTokenizer): number {
  let longest = longestTokens.get(tokenizer);
  if (longest === undefined) {
    longest = 1;
    for (let id = 0; id < tokenizer.size; id++) longest = Math.max(longest, tokenizer.decode([id]).length);
    longestTokens.set(tokenizer, longest);
  }
  return longest;
}

function tooLong(maxModelLen: number, what: string, param: string): ApiError {
  return new ApiError(
    400,
    `this model's maximum context length is ${maxModelLen} tokens, and ${what}; shorten it or set truncate_prompt_tokens.`,
    "context_length_exceeded",
    param,
  );
}

/**
 * Most bytes one prompt may take in a request body: a max_model_len prompt of the longest tokens,
 * JSON-escaped, plus room for the other fields. A body may have this much per prompt it holds.
 */
export function bodyBytesPerPrompt(ctx: Pick<ServerContext, "engine">): number {
  const { limits, tokenizer } = ctx.engine;
  return 256 * 1024 + limits.maxModelLen * Math.max(12, longestToken(tokenizer) * 6);
}

/** Most characters a prompt's text may have: max_model_len tokens of the longest token's characters. */
export function maxPromptChars(ctx: Pick<ServerContext, "engine">): number {
  return ctx.engine.limits.maxModelLen * longestToken(ctx.engine.tokenizer);
}

/**
 * Refuses a body larger than its prompts need: `bodyBytesPerPrompt` for each (a batch of
 * prompts may be that many times one prompt's size, up to serve's hard cap checked on arrival).
 */
export function checkBodySize(ctx: Pick<ServerContext, "engine">, bytes: number, prompts: number): void {
  const most = bodyBytesPerPrompt(ctx) * Math.max(1, prompts);
  if (bytes > most)
    throw new ApiError(
      413,
      `the request body has ${bytes} bytes, more than its ${Math.max(1, prompts)} prompt(s) of at most max_model_len (${ctx.engine.limits.maxModelLen}) tokens need (${most}); send shorter prompts or fewer other fields.`,
      "body_too_large",
    );
}

/**
 * A prompt's token ids, refused before tokenizing when its text is longer than max_model_len
 * tokens could be; `truncate` keeps only the last that many tokens, as vLLM's truncate_prompt_tokens.
 */
export function promptTokenIds(
  ctx: ServerContext,
  prompt: string | readonly number[],
  addSpecialTokens: boolean,
  truncate: number | undefined,
): number[] {
  const { tokenizer, limits } = ctx.engine;
  const limit = limits.maxModelLen;
  if (typeof prompt !== "string") {
    if (truncate !== undefined) return prompt.slice(-truncate);
    if (prompt.length > limit) throw tooLong(limit, `the prompt has ${prompt.length} token ids`, "prompt");
    return [...prompt];
  }
  const longest = longestToken(tokenizer);
  if (truncate !== undefined) {
    // Only the tail can survive truncation; tokenizing just it bounds the work.
    const tail = prompt.length > truncate * longest ? prompt.slice(-truncate * longest) : prompt;
    return tokenizer.encode(tail, { addSpecialTokens }).slice(-truncate);
  }
  checkTextLength(ctx, prompt, "prompt");
  return tokenizer.encode(prompt, { addSpecialTokens });
}

/** Refuses a text that would be over max_model_len tokens however it tokenizes, before tokenizing it. */
export function checkTextLength(ctx: ServerContext, text: string, param: string): void {
  const most = maxPromptChars(ctx);
  if (text.length > most)
    throw tooLong(
      ctx.engine.limits.maxModelLen,
      `the ${param} has ${text.length} characters (more than ${most})`,
      param,
    );
}

/** A chat's messages each add tokens; more messages than max_model_len cannot fit. */
export function checkMessageCount(ctx: ServerContext, count: number): void {
  const limit = ctx.engine.limits.maxModelLen;
  if (count > limit) throw tooLong(limit, `the chat has ${count} messages`, "messages");
}
