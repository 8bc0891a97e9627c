import type { DeviceLogprobsGate } from "../catalog/index.js";
import { type Endpoint, type ProbedEndpoint, scoreTokens } from "../client/index.js";
import { BringupError } from "../common/errors.js";
import type { Gate, GateOutcome } from "./gate.js";
import { optionalReference, requireCorpus, requireEndpoint } from "./require.js";

type Spec = typeof DeviceLogprobsGate._output;

/** Tokens per scored window: past the tiny ports' 64-token sliding windows, so they slide. */
export const DEVICE_WINDOW_TOKENS = 192;
export const DEVICE_WINDOWS = 3;
/** The greedy continuation starts after this many tokens of each window. */
const GREEDY_PROMPT_TOKENS = 48;
const GREEDY_TOKENS = 16;

/** One greedy continuation: its tokens, their logprobs and each position's top-k (token -> logprob). */
interface Greedy {
  readonly tokens: readonly string[];
  readonly logprobs: readonly number[];
  readonly top: readonly Readonly<Record<string, number>>[];
}

/**
 * The device model code (a vLLM plugin served by vLLM) against the reference engine on the same
 * checkpoint, in the spirit of vLLM's `check_logprobs_close` (tests/models/utils.py):
 * - prompt logprobs of corpus windows, sent to both as the same token ids: the largest
 *   |device - reference| over every scored token must be within `max_logprob_diff`;
 * - greedy continuations: equal token by token; where they first differ each side's token must be
 *   among the other's top `top_k`, and the rest is not compared (the contexts differ from there).
 * Samples are each window's largest |difference|.
 */
export const deviceLogprobsGate: Gate<Spec> = {
  kind: "device-logprobs",
  needsEndpoint: true,
  missingInput(_spec, given) {
    if (given.reference) return undefined;
    return new BringupError(
      "GATE_NEEDS_REFERENCE",
      "the device-logprobs gate compares the device endpoint with the reference engine serving the same checkpoint: pass --reference URL.",
    );
  },
  async run(spec, context) {
    const device = requireEndpoint(context);
    // Present: runGate checked missingInput before calling run.
    const reference = optionalReference(context) as ProbedEndpoint;
    const corpus = requireCorpus(context);
    const windowTokens = context.windowTokens ?? spec.window_tokens ?? DEVICE_WINDOW_TOKENS;
    const windows = await sameWindows(
      device,
      reference,
      corpus,
      windowTokens,
      context.windows ?? DEVICE_WINDOWS,
    );
    const perWindow: number[] = [];
    let scored = 0;
    for (const ids of windows) {
      const a = await scoreTokens(device.endpoint, device.requireScoring(), ids);
      const b = await scoreTokens(reference.endpoint, reference.requireScoring(), ids);
      perWindow.push(Math.max(...a.map((x, i) => Math.abs(x - (b[i] as number)))));
      scored += a.length;
    }
    const maxDiff = Math.max(...perWindow);
    const greedy: string[] = [];
    for (const ids of windows) {
      const prompt = ids.slice(0, GREEDY_PROMPT_TOKENS);
      const problem = greedyClose(
        await greedyDecode(device.endpoint, prompt, spec.top_k),
        await greedyDecode(reference.endpoint, prompt, spec.top_k),
      );
      if (problem !== undefined) greedy.push(problem);
    }
    const passed = maxDiff <= spec.max_logprob_diff && greedy.length === 0;
    const greedyText =
      greedy.length === 0
        ? `${windows.length} greedy continuations of ${GREEDY_TOKENS} tokens close`
        : `greedy: ${greedy.join("; ")}`;
    return {
      kind: "device-logprobs",
      status: passed ? "passed" : "failed",
      summary: `${spec.device} vs the reference engine: largest prompt-logprob difference ${maxDiff.toPrecision(3)} nats over ${scored} tokens (limit ${spec.max_logprob_diff}); ${greedyText}`,
      metric: "prompt_logprob_max_abs_diff",
      label: `largest |device - reference| prompt logprob per window of ${windowTokens} tokens`,
      unit: "nats",
      value: maxDiff,
      arms: [{ name: device.endpoint.url, samples: perWindow, reference: false }],
      measured: {
        max_abs_diff: maxDiff,
        limit: spec.max_logprob_diff,
        scored_tokens: scored,
        windows: windows.length,
        window_tokens: windowTokens,
        greedy_tokens: GREEDY_TOKENS,
        greedy_problems: greedy,
        top_k: spec.top_k,
        served: spec.served,
        block_by_block: spec.block_by_block ?? [],
      },
    } satisfies GateOutcome;
  },
};

/** Corpus windows as token ids; both endpoints must cut the corpus into the same ids. */
async function sameWindows(
  device: ProbedEndpoint,
  reference: ProbedEndpoint,
  corpus: string,
  size: number,
  count: number,
): Promise<number[][]> {
  device.requireTokenizer();
  reference.requireTokenizer();
  const ids = await device.endpoint.tokenize(corpus, false);
  const refIds = await reference.endpoint.tokenize(corpus, false);
  const n = Math.min(ids.length, size * count);
  if (ids.slice(0, n).some((id, i) => id !== refIds[i])) {
    throw new BringupError(
      "TOKENIZER_MISMATCH",
      `${device.endpoint.url} and ${reference.endpoint.url} tokenize the corpus differently; serve the same checkpoint directory (its tokenizer.json) on both.`,
      { subject: device.endpoint.url },
    );
  }
  const windows: number[][] = [];
  for (let at = 0; at + size <= n; at += size) windows.push(ids.slice(at, at + size));
  if (windows.length === 0) {
    throw new BringupError(
      "CORPUS_TOO_SHORT",
      `the corpus is ${ids.length} tokens long, shorter than one window of ${size}; use a smaller window.`,
    );
  }
  return windows;
}

async function greedyDecode(endpoint: Endpoint, prompt: readonly number[], topK: number): Promise<Greedy> {
  const choice = await endpoint.complete({
    prompt,
    max_tokens: GREEDY_TOKENS,
    temperature: 0,
    logprobs: topK,
    ignore_eos: true,
    // Token ids, not texts: a token inside a UTF-8 sequence is shown differently by each server
    // (vLLM "" or the completed character, the engine U+FFFD), so its text does not identify it.
    return_tokens_as_token_ids: true,
  });
  const lp = choice.logprobs;
  if (!lp?.top_logprobs || lp.token_logprobs.some((x) => x === null)) {
    throw new BringupError(
      "ENDPOINT_LACKS_LOGPROBS",
      `${endpoint.url} returned no top logprobs for a greedy completion; the gate needs logprobs=${topK}.`,
      { subject: endpoint.url },
    );
  }
  return {
    tokens: lp.tokens,
    logprobs: lp.token_logprobs as number[],
    top: lp.top_logprobs.map((t) => t ?? {}),
  };
}

function inTop(token: string, top: Readonly<Record<string, number>> | undefined): boolean {
  return Object.hasOwn(top ?? {}, token);
}

/**
 * undefined when the two continuations are close in check_logprobs_close's sense; else what
 * differed. Tokens are compared by id (`token_id:N`, as both servers name them on request).
 */
export function greedyClose(device: Greedy, reference: Greedy): string | undefined {
  const n = Math.min(device.tokens.length, reference.tokens.length);
  for (let i = 0; i < n; i++) {
    const a = device.tokens[i] as string;
    const b = reference.tokens[i] as string;
    if (a === b) continue;
    const aInB = inTop(a, reference.top[i]);
    const bInA = inTop(b, device.top[i]);
    if (aInB && bInA) return undefined;
    return `position ${i}: device ${JSON.stringify(a)} ${aInB ? "is" : "is not"} in the reference's top-k, reference ${JSON.stringify(b)} ${bInA ? "is" : "is not"} in the device's`;
  }
  if (device.tokens.length !== reference.tokens.length) {
    return `lengths differ: device ${device.tokens.length}, reference ${reference.tokens.length} tokens`;
  }
  return undefined;
}
