import type { Context } from "hono";
import { templateMessages } from "./chat.js";
import { requireModel, type ServerContext } from "./context.js";
import { parseBody } from "./request-body.js";
import { detokenizeRequestSchema, tokenizeRequestSchema } from "./schemas.js";

/** POST /tokenize, vLLM's shape: a prompt (or chat messages, templated) in, `{count, max_model_len, tokens}` out. */
export async function tokenize(ctx: ServerContext, c: Context): Promise<Response> {
  const body = parseBody(await c.req.text(), tokenizeRequestSchema);
  requireModel(ctx, body.model);
  const tokenizer = ctx.engine.tokenizer;
  let tokens: number[];
  if ("prompt" in body) {
    tokens = tokenizer.encode(body.prompt, { addSpecialTokens: body.add_special_tokens ?? true });
  } else {
    const text = tokenizer.applyChatTemplate(templateMessages(body.messages), {
      addGenerationPrompt: body.add_generation_prompt ?? true,
    });
    // The template writes the special tokens itself, so none are added by default (vLLM's rule).
    tokens = tokenizer.encode(text, { addSpecialTokens: body.add_special_tokens ?? false });
  }
  return c.json({
    count: tokens.length,
    max_model_len: ctx.engine.limits.maxModelLen,
    tokens,
    token_strs: null,
  });
}

/** POST /detokenize, vLLM's shape: `{tokens}` in, `{prompt}` out. */
export async function detokenize(ctx: ServerContext, c: Context): Promise<Response> {
  const body = parseBody(await c.req.text(), detokenizeRequestSchema);
  requireModel(ctx, body.model);
  return c.json({ prompt: ctx.engine.tokenizer.decode(body.tokens) });
}
