import { afterAll, describe, expect, it } from "vitest";
import {
  Engine,
  type EngineOptions,
  type GenerateRequest,
  type LoadedModel,
  readCorpus,
  type StepOutput,
} from "../../../../src/engine/index.js";
import { collect } from "../../../../src/engine/tests/engines.js";
import { ServerMetrics } from "../../../../src/server/metrics.js";
import { plantedDrafts } from "../../../../test/helpers/planted-drafts.js";
import { bringupErrorOf, portReference } from "../../../../test/helpers/port-reference.js";

// Past the window (32) and the indexer's top-k, so verification rolls back across compressed rows.
const ref = await portReference("deepseek-v4.1-flash");
const model = ref.referenceModel();
const corpus = await readCorpus();
const text = model.tokenizer.encode(corpus.slice(0, 20_000));
const prompt = text.slice(0, 203);
const engines: Engine[] = [];
afterAll(async () => {
  await Promise.all(engines.map((e) => e.close()));
});

function engine(options: EngineOptions = {}, served: LoadedModel = model): Engine {
  const e = new Engine(served, { threads: 2, maxModelLen: 512, blockSize: 16, ...options });
  engines.push(e);
  return e;
}

const tokensOf = (outs: StepOutput[]) =>
  outs.flatMap((o) => (o.token ? [[o.token.tokenId, o.token.logprob, o.token.rank]] : []));
const greedy = (promptTokenIds: readonly number[], maxTokens = 24): GenerateRequest => ({
  promptTokenIds,
  maxTokens,
  sampling: { temperature: 0 },
  logprobs: 0,
  ignoreEos: true,
});

/** The target's own greedy outputs drafted, wrong at every third position. */
const planted = (continuations: readonly (readonly number[])[]) => plantedDrafts(model, continuations, 3);

const ids = (outs: StepOutput[]) => outs.flatMap((o) => (o.token ? [o.token.tokenId] : []));

describe("MTP drafting on DeepSeek-V4.1-Flash's tiny model", () => {
  it("greedy decode with drafting is bit-identical to decode without it, one stream", async () => {
    const plain = tokensOf(await collect(engine().submit(greedy(prompt, 40))));
    for (const k of [1, 3]) {
      const e = engine({ speculativeTokens: k });
      expect(tokensOf(await collect(e.submit(greedy(prompt, 40))))).toEqual(plain);
      const spec = e.stats().specDecode;
      expect(spec?.numDraftTokens).toBeGreaterThan(0);
      expect(spec?.acceptedPerPosition).toHaveLength(k);
    }
  });

  it("kept, partly kept and rejected drafts roll back to the same tokens, one stream", async () => {
    const plain = await collect(engine().submit(greedy(prompt, 40)));
    const served = planted([[...prompt, ...ids(plain)]]);
    for (const k of [1, 4]) {
      const e = engine({ speculativeTokens: k }, served);
      expect(tokensOf(await collect(e.submit(greedy(prompt, 40))))).toEqual(tokensOf(plain));
      const spec = e.stats().specDecode;
      expect(spec?.numAcceptedTokens).toBeGreaterThan(0);
      expect(spec?.numAcceptedTokens).toBeLessThan(spec?.numDraftTokens ?? 0);
      if (k === 4) expect(spec?.acceptedPerPosition[1]).toBeGreaterThan(0);
    }
  });

  it("an MTP layer of compressed sparse attention (its own rows and indexer) drafts without changing the output", async () => {
    // Legacy compress_ratios with an entry for the MTP layer (V4-Flash ships 0 there; 4 here).
    const { layer_types: _, compress_rates: __, ...legacy } = ref.referenceConfig;
    const make = ref.architecture.tinyModel as NonNullable<typeof ref.architecture.tinyModel>;
    const csa = ref.build(
      "mtp-csa",
      make({ ...legacy, compress_ratios: [0, 4, 32, 4, 4], compress_rate_hca: 32 }, ref.corpus),
    );
    const plain = await collect(engine({}, csa).submit(greedy(prompt, 40)));
    const served = plantedDrafts(csa, [[...prompt, ...ids(plain)]], 3);
    const e = engine({ speculativeTokens: 3 }, served);
    expect(tokensOf(await collect(e.submit(greedy(prompt, 40))))).toEqual(tokensOf(plain));
    expect(e.stats().specDecode?.numAcceptedTokens).toBeGreaterThan(0);
  });

  it("16 streams batched, prefill chunked, equal their decode without drafting", async () => {
    const prompts = Array.from({ length: 16 }, (_, i) => text.slice(i * 37, i * 37 + 40 + i * 5));
    const run = (options: EngineOptions, served?: LoadedModel) => {
      const e = engine({ maxNumBatchedTokens: 96, ...options }, served);
      return Promise.all(prompts.map((p) => collect(e.submit(greedy(p, 16)))));
    };
    const plain = await run({});
    expect((await run({ speculativeTokens: 2 })).map(tokensOf)).toEqual(plain.map(tokensOf));
    const served = planted(prompts.map((p, i) => [...p, ...ids(plain[i] as StepOutput[])]));
    expect((await run({ speculativeTokens: 3 }, served)).map(tokensOf)).toEqual(plain.map(tokensOf));
  });

  it("under preemption, drafting still gives the same tokens", async () => {
    const prompts = Array.from({ length: 6 }, (_, i) => text.slice(i * 53, i * 53 + 90));
    const plain = await Promise.all(prompts.map((p) => collect(engine().submit(greedy(p, 48)))));
    const served = planted(prompts.map((p, i) => [...p, ...ids(plain[i] as StepOutput[])]));
    // Room for a few sequences' windows and compressed rows at once: later ones preempt.
    const e = engine({ speculativeTokens: 3, kvCacheBytes: 300_000 }, served);
    const drafted = await Promise.all(prompts.map((p) => collect(e.submit(greedy(p, 48)))));
    expect(e.stats().preemptions).toBeGreaterThan(0);
    expect(e.stats().specDecode?.numAcceptedTokens).toBeGreaterThan(0);
    expect(drafted.map(tokensOf)).toEqual(plain.map(tokensOf));
  });

  it("reports acceptance in /metrics under vLLM's spec-decode names", async () => {
    const plain = await collect(engine().submit(greedy(prompt, 12)));
    const e = engine({ speculativeTokens: 2 }, planted([[...prompt, ...ids(plain)]]));
    await collect(e.submit(greedy(prompt, 12)));
    const spec = e.stats().specDecode;
    const text = await new ServerMetrics("tiny", () => e.stats()).registry.metrics();
    const value = (name: string) => Number(text.match(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, "m"))?.[1]);
    expect(value("vllm:spec_decode_num_drafts_total")).toBe(spec?.numDrafts);
    expect(value("vllm:spec_decode_num_draft_tokens_total")).toBe(spec?.numDraftTokens);
    expect(value("vllm:spec_decode_num_accepted_tokens_total")).toBe(spec?.numAcceptedTokens);
    expect(text).toContain(
      `vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="tiny",engine="0",position="1"} ${spec?.acceptedPerPosition[1]}`,
    );
    expect(spec?.numAcceptedTokens).toBeGreaterThan(0);
    const off = await new ServerMetrics("tiny", () => engine().stats()).registry.metrics();
    expect(off).not.toContain("spec_decode");
  });

  it("sampled decode with drafting keeps the target's distribution (two-sample chi-square)", async () => {
    // The third generated token of 300 seeds with drafting and 300 without, top_k 3 so a few
    // continuations carry all the mass. Drafts are the greedy continuation, so they are kept or
    // rejected by the rule, both often. Bins: the 5 most frequent tokens and the rest (df 5);
    // 35.89 is chi-square's 1 - 1e-6 quantile at df 5, so a correct rule fails once in a million
    // seed sets (these are fixed). Emitting the draft whenever it is offered moves the counts far
    // past it.
    const short = prompt.slice(0, 24);
    const plain = await collect(engine().submit(greedy(short, 3)));
    const served = planted([[...short, ...ids(plain)]]);
    const sample = async (e: Engine, offset: number) =>
      Promise.all(
        Array.from({ length: 300 }, async (_, i) => {
          const outs = await collect(
            e.submit({ ...greedy(short, 3), sampling: { temperature: 1, topK: 3, seed: offset + i } }),
          );
          return ids(outs)[2] as number;
        }),
      );
    const without = await sample(engine(), 0);
    const e = engine({ speculativeTokens: 2 }, served);
    const drafted = await sample(e, 10_000);
    const spec = e.stats().specDecode;
    expect(spec?.numAcceptedTokens).toBeGreaterThan(0);
    expect(spec?.numAcceptedTokens).toBeLessThan(spec?.numDraftTokens ?? 0);
    const count = (xs: number[]) =>
      xs.reduce((m, x) => m.set(x, (m.get(x) ?? 0) + 1), new Map<number, number>());
    const [a, b] = [count(without), count(drafted)];
    const top = [...count([...without, ...drafted])]
      .sort((x, y) => y[1] - x[1])
      .slice(0, 5)
      .map(([t]) => t);
    const bins = (m: Map<number, number>) => {
      const kept = top.map((t) => m.get(t) ?? 0);
      return [...kept, 300 - kept.reduce((s, n) => s + n, 0)];
    };
    const [A, B] = [bins(a), bins(b)];
    const chi2 = A.reduce((s, x, i) => {
      const y = B[i] as number;
      return x + y === 0 ? s : s + (x - y) ** 2 / (x + y);
    }, 0);
    expect(chi2).toBeLessThan(35.89);
  });

  it("seeded sampling with drafting repeats itself for a seed", async () => {
    const req: GenerateRequest = { ...greedy(prompt, 24), sampling: { temperature: 1, seed: 7 } };
    const e = engine({ speculativeTokens: 2 });
    const [a, b] = [await collect(e.submit(req)), await collect(e.submit(req))];
    expect(tokensOf(a)).toEqual(tokensOf(b));
    expect(tokensOf(a)).toHaveLength(24);
  });

  it("refuses --speculative-tokens without an MTP layer, naming the field or the tensor", () => {
    const noMtp = ref.build(
      "no-mtp",
      ref.architecture.tinyModel?.(
        { ...ref.referenceConfig, num_nextn_predict_layers: 0 },
        ref.corpus,
      ) as NonNullable<ReturnType<NonNullable<typeof ref.architecture.tinyModel>>>,
    );
    const field = bringupErrorOf(() => new Engine(noMtp, { speculativeTokens: 2 }));
    expect(field.code).toBe("SPECULATIVE_UNAVAILABLE");
    expect(field.message).toContain("num_nextn_predict_layers is 0");
    const files = ref.referenceFiles();
    const tensors = new Map([...files.tensors].filter(([name]) => !name.startsWith("mtp.")));
    const dropped = bringupErrorOf(
      () => new Engine(ref.build("dropped", { ...files, tensors }), { speculativeTokens: 2 }),
    );
    expect(dropped.code).toBe("SPECULATIVE_UNAVAILABLE");
    expect(dropped.message).toContain("mtp.0.e_proj.weight");
  });
});
