import type { BitIdenticalDecodeGate } from "../catalog/index.js";
import type { CompletionRequest, Endpoint } from "../client/index.js";
import { BringupError } from "../common/errors.js";
import type { Gate, GateOutcome } from "./gate.js";
import { optionalReference, requireEndpoint } from "./require.js";

type Spec = typeof BitIdenticalDecodeGate._output;

const PROMPTS = [
  "The harbour town woke slowly,",
  "To bake bread, first",
  "In the field journal she wrote",
  "The workshop was full of",
];
const DECODE_TOKENS = 16;
const SEED = 1234;

interface Decode {
  readonly tokens: readonly string[];
  readonly logprobs: readonly (number | null)[];
}

/**
 * Greedy and seeded decodes compared token by token and logprob by logprob (exact equality):
 * between the endpoint and a reference build (two-builds), or between requests sent one at a time
 * and all at once to one endpoint (batch-invariance). Samples are the mismatching positions per decode.
 */
export const bitIdenticalDecodeGate: Gate<Spec> = {
  kind: "bit-identical-decode",
  async run(spec, context) {
    const target = requireEndpoint(context);
    const reference = optionalReference(context);
    if (spec.compare === "golden") {
      throw new BringupError(
        "GATE_GOLDEN_UNSUPPORTED",
        "golden-file comparison is not implemented yet; compare two builds (--reference URL) or batch invariance.",
      );
    }
    if (spec.compare === "two-builds" && reference === undefined) {
      throw new BringupError(
        "GATE_NEEDS_REFERENCE",
        "comparing two builds needs the other build: pass --reference URL.",
      );
    }
    const requests: CompletionRequest[] = spec.sampling.flatMap((mode) =>
      PROMPTS.map((prompt) => ({
        prompt,
        max_tokens: DECODE_TOKENS,
        logprobs: 0,
        ignore_eos: true,
        ...(mode === "greedy" ? { temperature: 0 } : { temperature: 1, top_p: 1, seed: SEED }),
      })),
    );
    let a: Decode[];
    let b: Decode[];
    if (spec.compare === "two-builds") {
      a = await sequential(target.endpoint, requests);
      b = await sequential((reference as NonNullable<typeof reference>).endpoint, requests);
    } else {
      a = await sequential(target.endpoint, requests);
      b = await Promise.all(requests.map((r) => decode(target.endpoint, r)));
    }
    const samples = a.map((x, i) => mismatches(x, b[i] as Decode));
    const bad = samples.filter((s) => s > 0).length;
    const what = spec.compare === "two-builds" ? "endpoint vs reference build" : "one at a time vs batched";
    return {
      kind: "bit-identical-decode",
      status: bad === 0 ? "passed" : "failed",
      summary: `${requests.length - bad}/${requests.length} decodes bit-identical (${what}; ${spec.sampling.join(" + ")}, ${DECODE_TOKENS} tokens each)`,
      metric: "decode_mismatched_positions",
      label: `positions differing between decodes, ${what}`,
      unit: "count",
      value: samples.reduce((s, x) => s + x, 0),
      arms: [{ name: target.endpoint.url, samples, reference: false }],
      measured: { decodes: requests.length, differing_decodes: bad, compare: spec.compare },
    } satisfies GateOutcome;
  },
};

async function sequential(endpoint: Endpoint, requests: readonly CompletionRequest[]): Promise<Decode[]> {
  const out: Decode[] = [];
  for (const r of requests) out.push(await decode(endpoint, r));
  return out;
}

async function decode(endpoint: Endpoint, request: CompletionRequest): Promise<Decode> {
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
function mismatches(a: Decode, b: Decode): number {
  const n = Math.max(a.tokens.length, b.tokens.length);
  let count = 0;
  for (let i = 0; i < n; i++) {
    if (a.tokens[i] !== b.tokens[i] || !Object.is(a.logprobs[i], b.logprobs[i])) count += 1;
  }
  return count;
}
