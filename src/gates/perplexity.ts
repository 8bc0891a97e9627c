import type { PerplexityGate } from "../catalog/index.js";
import { type ProbedEndpoint, scoreTokens } from "../client/index.js";
import { BringupError } from "../common/errors.js";
import type { Gate, GateOutcome } from "./gate.js";
import { optionalReference, requireCorpus, requireEndpoint } from "./require.js";

type Spec = typeof PerplexityGate._output;

/**
 * Perplexity over windows of the corpus, cut with the endpoint's own tokenizer and scored through
 * its prompt logprobs; passes when |ppl - ref| / ref is within the manifest's margin. The reference
 * is another endpoint scoring the same token ids, or a recorded value.
 */
export const perplexityGate: Gate<Spec> = {
  kind: "perplexity",
  needsEndpoint: true,
  missingInput(_spec, given) {
    if (given.reference || given.referenceValue) return undefined;
    return new BringupError(
      "GATE_NEEDS_REFERENCE",
      "the perplexity gate compares against a reference: pass --reference URL or --reference-value PPL.",
    );
  },
  async run(spec, context) {
    const target = requireEndpoint(context);
    const referenceEndpoint = optionalReference(context);
    const corpus = requireCorpus(context);
    target.requireScoring();
    const windowTokens = context.windowTokens ?? 512;
    const count = context.windows ?? 4;
    const windows = await cutWindows(target, corpus, windowTokens, count);
    const measured = await perplexities(target, windows);
    let reference: number;
    let referenceSamples: number[] = [];
    if (referenceEndpoint !== undefined) {
      // Same ids to both arms, so both tokenizers must agree on the corpus.
      const refWindows = await cutWindows(referenceEndpoint, corpus, windowTokens, count);
      if (JSON.stringify(refWindows) !== JSON.stringify(windows)) {
        throw new BringupError(
          "TOKENIZER_MISMATCH",
          `${referenceEndpoint.endpoint.url} tokenizes the corpus differently from ${target.endpoint.url}; perplexities over different tokens are not comparable.`,
          { subject: referenceEndpoint.endpoint.url },
        );
      }
      const ref = await perplexities(referenceEndpoint, windows);
      reference = ref.overall;
      referenceSamples = ref.perWindow;
    } else {
      reference = context.referenceValue as number;
    }
    const relative = Math.abs(measured.overall - reference) / reference;
    const passed = relative <= spec.max_relative_diff;
    return {
      kind: "perplexity",
      status: passed ? "passed" : "failed",
      summary: `perplexity ${measured.overall.toFixed(4)} vs reference ${reference.toFixed(4)}: relative difference ${relative.toPrecision(2)} (limit ${spec.max_relative_diff})`,
      metric: "perplexity",
      label: `perplexity over ${windows.length} corpus windows of ${windowTokens} tokens`,
      unit: "perplexity",
      value: measured.overall,
      arms: [
        { name: target.endpoint.url, samples: measured.perWindow, reference: false },
        ...(referenceSamples.length > 0 && referenceEndpoint
          ? [{ name: referenceEndpoint.endpoint.url, samples: referenceSamples, reference: true }]
          : []),
      ],
      measured: {
        perplexity: measured.overall,
        reference,
        relative_diff: relative,
        windows: windows.length,
        window_tokens: windowTokens,
      },
    } satisfies GateOutcome;
  },
};

async function cutWindows(
  target: ProbedEndpoint,
  corpus: string,
  size: number,
  count: number,
): Promise<number[][]> {
  target.requireTokenizer();
  const ids = await target.endpoint.tokenize(corpus, false);
  const windows: number[][] = [];
  for (let at = 0; at + size <= ids.length && windows.length < count; at += size)
    windows.push(ids.slice(at, at + size));
  if (windows.length === 0) {
    throw new BringupError(
      "CORPUS_TOO_SHORT",
      `the corpus is ${ids.length} tokens long, shorter than one window of ${size}; use a smaller window.`,
    );
  }
  return windows;
}

async function perplexities(
  target: ProbedEndpoint,
  windows: number[][],
): Promise<{ overall: number; perWindow: number[] }> {
  const path = target.requireScoring();
  let total = 0;
  let n = 0;
  const perWindow: number[] = [];
  for (const window of windows) {
    const logprobs = await scoreTokens(target.endpoint, path, window);
    const sum = logprobs.reduce((a, b) => a + b, 0);
    perWindow.push(Math.exp(-sum / logprobs.length));
    total += sum;
    n += logprobs.length;
  }
  return { overall: Math.exp(-total / n), perWindow };
}
