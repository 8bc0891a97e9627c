import type { CompletionRequest, Endpoint } from "../client/index.js";
import { BringupError } from "../common/errors.js";

const PROMPTS = [
  "The harbour town woke slowly,",
  "To bake bread, first",
  "In the field journal she wrote",
  "The workshop was full of",
];
export const DECODE_TOKENS = 16;
const SEED = 1234;

export type SamplingMode = "greedy" | "seeded";

/** One decode as the endpoint returned it: token strings and their logprobs. */
export interface Decode {
  readonly tokens: readonly string[];
  readonly logprobs: readonly (number | null)[];
}

/** The fixed decode requests of the bit-identity gate, for each sampling mode. */
export function decodeRequests(sampling: readonly SamplingMode[]): CompletionRequest[] {
  return sampling.flatMap((mode) =>
    PROMPTS.map((prompt) => ({
      prompt,
      max_tokens: DECODE_TOKENS,
      logprobs: 0,
      ignore_eos: true,
      ...(mode === "greedy" ? { temperature: 0 } : { temperature: 1, top_p: 1, seed: SEED }),
    })),
  );
}

/** The requests one after another (batch size 1). */
export async function decodeSequentially(
  endpoint: Endpoint,
  requests: readonly CompletionRequest[],
): Promise<Decode[]> {
  const out: Decode[] = [];
  for (const r of requests) out.push(await decode(endpoint, r));
  return out;
}

export async function decode(endpoint: Endpoint, request: CompletionRequest): Promise<Decode> {
  const choice = await endpoint.complete(request);
  if (!choice.logprobs) {
    throw new BringupError(
      "ENDPOINT_LACKS_LOGPROBS",
      `${endpoint.url} returned no logprobs for a completion; the gate compares logprobs bit for bit.`,
      { subject: endpoint.url },
    );
  }
  return { tokens: choice.logprobs.tokens, logprobs: choice.logprobs.token_logprobs };
}

/** Positions where token or logprob differ (a length difference counts each missing position). */
export function mismatches(a: Decode, b: Decode): number {
  const n = Math.max(a.tokens.length, b.tokens.length);
  let count = 0;
  for (let i = 0; i < n; i++) {
    if (a.tokens[i] !== b.tokens[i] || !Object.is(a.logprobs[i], b.logprobs[i])) count += 1;
  }
  return count;
}
