import type { Context } from "hono";
import { ApiError } from "./api-error.js";
import { chatPromptIds } from "./chat.js";
import { requireModel, type ServerContext } from "./context.js";
import { checkBodySize } from "./prompt-limits.js";
import { parseBody, readBodyText } from "./request-body.js";
import { detokenizeRequestSchema, tokenizeRequestSchema } from "./schemas.js";

/**
 * POST /tokenize, vLLM's shape: a prompt (or chat messages, templated) in, `{count, max_model_len,
 * tokens, token_strs}` out (vllm/entrypoints/openai/serving_tokenization.py). Like vLLM it counts texts longer than max_model_len (clients tokenize corpora with
 * it); the body limit, set from max_model_len, bounds the work.
 */
export async function tokenize(ctx: ServerContext, c: Context): Promise<Response> {
  const text = await readBodyText(c.req.raw, ctx.maxRequestBodyBytes);
  const body = parseBody(text, tokenizeRequestSchema);
  checkBodySize(ctx, Buffer.byteLength(text), 1);
  requireModel(ctx, body.model);
  const tokens =
    "prompt" in body
      ? ctx.engine.tokenizer.encode(body.prompt, { addSpecialTokens: body.add_special_tokens ?? true })
      : await chatPromptIds(
          ctx,
          body.messages,
          body.add_generation_prompt ?? true,
          body.add_special_tokens ?? false,
          false,
          body.chat_template ?? undefined,
        );
  return c.json({
    count: tokens.length,
    max_model_len: ctx.engine.limits.maxModelLen,
    tokens,
    // vLLM's token_strs are the vocabulary's own strings (convert_ids_to_tokens), e.g. "Ġthe".
    token_strs: body.return_token_strs ? tokens.map((id) => ctx.engine.tokenizer.vocabToken(id)) : null,
  });
}

/** POST /detokenize, vLLM's shape: `{tokens}` in, `{prompt}` out. */
export async function detokenize(ctx: ServerContext, c: Context): Promise<Response> {
  const body = parseBody(await readBodyText(c.req.raw, ctx.maxRequestBodyBytes), detokenizeRequestSchema);
  requireModel(ctx, body.model);
  const vocab = ctx.engine.vocabSize;
  const outside = body.tokens.findIndex((id) => id >= vocab);
  if (outside >= 0)
    throw new ApiError(
      400,
      `\`tokens.${outside}\`: token id ${body.tokens[outside]} is outside the vocabulary (0..${vocab - 1}).`,
      "invalid_value",
      `tokens.${outside}`,
    );
  return c.json({ prompt: ctx.engine.tokenizer.decode(body.tokens) });
}
