import { createHash } from "node:crypto";
import type { NeedlesGate } from "../catalog/index.js";
import { BringupError } from "../common/errors.js";
import type { Gate, GateContext, GateOutcome, NeedleRow } from "./gate.js";
import { requireCorpus, requireEndpoint } from "./require.js";

type Spec = typeof NeedlesGate._output;

/** Default tokens left after the prompt for the answer: the prompt plus the budget is the context length. */
const ANSWER_TOKENS = 32;
const KEYS = [
  "amber falcon",
  "quiet lantern",
  "copper meadow",
  "silver orchard",
  "hollow comet",
  "velvet harbor",
  "crimson atlas",
  "frozen willow",
];

/** Needle k: a key and a 7-digit value derived from a hash, the same on every run (RULER's shape). */
export function needle(k: number): { key: string; value: string } {
  const digest = createHash("sha256").update(`bringup-needle/${k}`).digest();
  const value = String(1_000_000 + (digest.readUInt32BE(0) % 9_000_000));
  return { key: KEYS[k % KEYS.length] as string, value };
}

/** Depths of `n` needles, evenly spread: 0.25, 0.5, 0.75 for three. */
export function needleDepths(n: number): number[] {
  return Array.from({ length: n }, (_, k) => (k + 1) / (n + 1));
}

/**
 * Needles in a haystack, RULER style: for each context length, a haystack of corpus text built to
 * exactly (length - answer budget) tokens with the endpoint's tokenizer, holding `needles` needles
 * "The special magic number for KEY is: VALUE." at spread depths; each needle is asked for in its own
 * request (greedy), and counts as retrieved when the completion contains its value (exact string
 * match, never a model as judge). Passes when every length retrieves at least min_retrieved.
 */
export const needlesGate: Gate<Spec> = {
  kind: "needles",
  needsEndpoint: true,
  async run(spec, context: GateContext) {
    const target = requireEndpoint(context);
    const corpus = requireCorpus(context);
    target.requireTokenizer();
    if (spec.min_retrieved > spec.needles) {
      throw new BringupError(
        "GATE_SPEC_INVALID",
        `min_retrieved ${spec.min_retrieved} exceeds needles ${spec.needles}.`,
      );
    }
    const contexts = context.needleContexts ?? spec.contexts;
    const maxLen = target.probe.maxModelLen;
    const tooLong = contexts.filter((length) => maxLen !== undefined && length > maxLen);
    if (tooLong.length > 0) {
      throw new BringupError(
        "CONTEXT_BEYOND_ENDPOINT",
        `${target.endpoint.url} serves at most ${maxLen} tokens but the gate asks for ${tooLong.join(", ")}; serve a longer --max-model-len.`,
      );
    }
    const { endpoint } = target;
    const answerTokens = context.needleAnswerTokens ?? ANSWER_TOKENS;
    const filler = await endpoint.tokenize(corpus, false);
    // What the tokenizer puts before any text (a BOS for llama-style models), so the prompt starts as the model expects.
    const start = await endpoint.tokenize("", true);
    const depths = needleDepths(spec.needles);
    const needles = depths.map((_, k) => needle(k));
    const needleIds = await Promise.all(
      needles.map((n) => endpoint.tokenize(` The special magic number for ${n.key} is: ${n.value}.`, false)),
    );
    const questionIds = await Promise.all(
      needles.map((n) =>
        endpoint.tokenize(
          ` What is the special magic number for ${n.key}? The special magic number for ${n.key} is:`,
          false,
        ),
      ),
    );
    const rows: NeedleRow[] = [];
    /** Prompt lengths as the endpoint counted them (usage.prompt_tokens), one per context length. */
    const promptTokens = new Set<number>();
    const samples: number[] = [];
    for (const length of contexts) {
      const retrieved: boolean[] = [];
      for (const [k, n] of needles.entries()) {
        const question = questionIds[k] as number[];
        const needleTotal = needleIds.reduce((sum, ids) => sum + ids.length, 0);
        const fillerLength = length - answerTokens - start.length - question.length - needleTotal;
        if (fillerLength < needles.length) {
          throw new BringupError(
            "CONTEXT_TOO_SHORT",
            `a context of ${length} tokens cannot hold ${needles.length} needles and a question.`,
          );
        }
        const hay = repeatTo(filler, fillerLength);
        const prompt: number[] = [...start];
        let from = 0;
        for (const [j, depth] of depths.entries()) {
          const at = Math.round(depth * fillerLength);
          prompt.push(...hay.slice(from, at), ...(needleIds[j] as number[]));
          from = at;
        }
        prompt.push(...hay.slice(from), ...question);
        const choice = await endpoint.complete({ prompt, max_tokens: answerTokens, temperature: 0 });
        promptTokens.add(choice.promptTokens ?? prompt.length);
        const hit = choice.text.toLowerCase().includes(n.value.toLowerCase());
        retrieved.push(hit);
        samples.push(hit ? 1 : 0);
      }
      rows.push({ context: length, retrieved });
    }
    const worst = Math.min(...rows.map((r) => r.retrieved.filter(Boolean).length));
    const total = samples.filter((s) => s === 1).length;
    const passed = worst >= spec.min_retrieved;
    return {
      kind: "needles",
      status: passed ? "passed" : "failed",
      summary: `${total}/${samples.length} needles retrieved over ${contexts.length} context length(s); the worst length retrieved ${worst} of ${spec.needles} (needs ${spec.min_retrieved})`,
      metric: "needles_retrieved",
      label: `needles retrieved at ${contexts.join(", ")} tokens`,
      unit: "needles",
      value: total,
      arms: [{ name: endpoint.url, samples, reference: false }],
      grid: { depths, rows },
      measured: {
        retrieved: total,
        asked: samples.length,
        contexts: [...contexts],
        prompt_tokens: [...promptTokens],
        answer_tokens: answerTokens,
      },
    } satisfies GateOutcome;
  },
};

function repeatTo(ids: readonly number[], n: number): number[] {
  if (ids.length === 0) throw new BringupError("GATE_NEEDS_CORPUS", "the corpus tokenizes to nothing.");
  const out: number[] = [];
  while (out.length < n) out.push(...ids.slice(0, n - out.length));
  return out;
}
