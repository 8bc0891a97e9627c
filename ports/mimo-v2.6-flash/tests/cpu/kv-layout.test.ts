import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Engine,
  type EngineOptions,
  type GenerateRequest,
  type LoadedModel,
  type PromptLogprobs,
  readCorpus,
  type StepOutput,
} from "../../../../src/engine/index.js";
import { portReference } from "../../../../test/helpers/port-reference.js";
import { loadFiles } from "./reference.js";

const ref = await portReference("mimo-v2.6-flash");

// The reference config's window is 64 tokens and blocks are 16: the ring of a sliding layer holds
// the window and one window-sized chunk in flight (8 blocks), so 160 positions cross the window,
// many block boundaries and a wrap of the ring.
const BLOCK = 16;
let model: LoadedModel;
let corpusIds: number[];
const engines: Engine[] = [];

function engine(options: EngineOptions): Engine {
  const e = new Engine(model, { threads: 1, maxNumSeqs: 2, maxModelLen: 1024, blockSize: BLOCK, ...options });
  engines.push(e);
  return e;
}

async function collect(e: Engine, request: GenerateRequest): Promise<StepOutput[]> {
  const out: StepOutput[] = [];
  for await (const step of e.submit(request)) out.push(step);
  return out;
}

/** Every position's full log-softmax (the logits up to their log-sum-exp), as the engine reports it. */
async function promptDistributions(e: Engine, prompt: number[]): Promise<PromptLogprobs> {
  const [first] = await collect(e, {
    promptTokenIds: prompt,
    maxTokens: 0,
    promptLogprobs: model.config.vocabSize,
  });
  return first?.promptLogprobs ?? [];
}

beforeAll(async () => {
  const corpus = await readCorpus();
  model = await loadFiles(ref.referenceFiles(), "mimo-tiny");
  corpusIds = model.tokenizer.encode(corpus.slice(0, 4000), { addSpecialTokens: false });
});
afterAll(async () => {
  await Promise.all(engines.map((e) => e.close()));
});

describe("window-sized KV on the tiny reference model", () => {
  it("gives the same bits as the full layout with a sliding mask, however the prompt is chunked", async () => {
    const prompt = corpusIds.slice(0, 170);
    const full = await promptDistributions(engine({ kvLayout: "full" }), prompt);
    const ring = await promptDistributions(engine({ kvLayout: "window-sized" }), prompt);
    const oddChunks = await promptDistributions(
      engine({ kvLayout: "window-sized", maxNumBatchedTokens: 23 }),
      prompt,
    );
    expect(full).toHaveLength(170);
    expect(full[169]?.top).toHaveLength(model.config.vocabSize);
    // JSON keeps every float64 exactly (shortest round trip), so equal text is equal bits.
    expect(JSON.stringify(ring)).toBe(JSON.stringify(full));
    expect(JSON.stringify(oddChunks)).toBe(JSON.stringify(full));
  });

  it.each(["window-sized", "full"] as const)(
    "%s: decode equals a full forward across the window, block boundaries and the ring's wrap",
    async (kvLayout) => {
      const e = engine({ kvLayout });
      const prompt = corpusIds.slice(0, 50);
      const steps = await collect(e, {
        promptTokenIds: prompt,
        maxTokens: 110,
        ignoreEos: true,
        logprobs: 0,
        sampling: { temperature: 0 },
      });
      const generated = steps.flatMap((s) => (s.token ? [s.token] : []));
      expect(generated).toHaveLength(110);
      // One prefill of everything but the last token scores each generated token at its position.
      const all = [...prompt, ...generated.map((t) => t.tokenId)];
      const [scored] = await collect(e, {
        promptTokenIds: all.slice(0, -1),
        maxTokens: 1,
        promptLogprobs: 0,
        logprobs: 0,
        sampling: { temperature: 0 },
      });
      const prefill = [...(scored?.promptLogprobs ?? []).slice(prompt.length), scored?.token];
      expect(prefill.map((t) => t?.tokenId)).toEqual(generated.map((t) => t.tokenId));
      expect(prefill.map((t) => t?.logprob)).toEqual(generated.map((t) => t.logprob));
      // The last position is 159: past the window (64) and a whole ring.
      const ring = Math.max(...e.limits.kvGroups.map((g) => g.ringBlocks));
      if (kvLayout === "window-sized") expect(ring).toBeGreaterThan(0);
      expect(all.length - 1).toBeGreaterThan(ring * BLOCK);
    },
  );
});
