import { BringupError } from "../common/errors.js";
import type { Endpoint } from "./endpoint.js";

/** How an endpoint scores a prompt: vLLM's `prompt_logprobs`, or OpenAI's `echo` with `logprobs`. */
export type ScoringPath = "prompt_logprobs" | "echo";

/**
 * The log-probability of each prompt token after the first, given the tokens before it, through
 * the scoring path the endpoint offers. The prompt is sent as token ids so no tokenizer stands
 * between the ids and the scores.
 */
export async function scoreTokens(
  endpoint: Endpoint,
  path: ScoringPath,
  ids: readonly number[],
): Promise<number[]> {
  if (ids.length < 2) {
    throw new BringupError("SCORE_TOO_SHORT", "scoring needs at least two tokens.", {
      subject: endpoint.url,
    });
  }
  const missing = (what: string) =>
    new BringupError(
      "ENDPOINT_LACKS_PROMPT_LOGPROBS",
      `${endpoint.url} answered a scoring request without ${what}; it must return ${path === "prompt_logprobs" ? "vLLM's prompt_logprobs" : "echo + logprobs"} for every prompt token.`,
      { subject: endpoint.url },
    );
  if (path === "prompt_logprobs") {
    const choice = await endpoint.complete({
      prompt: ids,
      max_tokens: 1,
      temperature: 0,
      prompt_logprobs: 0,
    });
    const entries = choice.prompt_logprobs;
    if (!entries || entries.length < ids.length)
      throw missing("a prompt_logprobs entry for each prompt token");
    return ids.slice(1).map((id, i) => {
      const logprob = entries[i + 1]?.[String(id)]?.logprob;
      if (logprob === undefined) throw missing(`the logprob of prompt token ${id} at position ${i + 1}`);
      return logprob;
    });
  }
  const choice = await endpoint.complete({
    prompt: ids,
    max_tokens: 1,
    temperature: 0,
    echo: true,
    logprobs: 0,
  });
  const values = choice.logprobs?.token_logprobs;
  if (!values || values.length < ids.length) throw missing("echoed token_logprobs covering the prompt");
  return values.slice(1, ids.length).map((value, i) => {
    if (value === null) throw missing(`a logprob for prompt position ${i + 1}`);
    return value;
  });
}
