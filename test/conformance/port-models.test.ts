/**
 * The conformance suite every port with a reference config runs, written once (as Hono runs one router test file
 * over every router): each port's tiny reference model, as its manifest configures it, must keep
 * the engine's guarantees whatever blocks its model code composes.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { afterAll, describe, expect, it, vi } from "vitest";
import { registerServe } from "../../src/cli/commands/serve.js";
import {
  Engine,
  type EngineOptions,
  type GenerateRequest,
  type LoadedModel,
  loadModel,
  planKvCache,
  type StepOutput,
  unitBytes,
  unitsNeeded,
  writeTinyModel,
} from "../../src/engine/index.js";
import { collect } from "../../src/engine/tests/engines.js";
import { goldenLogprobs } from "../../src/engine/tests/golden-logprobs.js";
import { REFERENCE_SEED } from "../../src/flow/index.js";
import type { RunningServer } from "../../src/server/index.js";
import { portReference, referencePortIds } from "../helpers/port-reference.js";

const portIds = await referencePortIds();
const ports = await Promise.all(portIds.map((id) => portReference(id)));
const work = await mkdtemp(join(tmpdir(), "bringup-conformance-"));
const engines: Engine[] = [];
afterAll(async () => {
  await Promise.all(engines.map((e) => e.close()));
  await rm(work, { recursive: true, force: true });
});

const MAX_MODEL_LEN = 256;
const BLOCK_SIZE = 4;

function engine(model: LoadedModel, options: EngineOptions = {}): Engine {
  const e = new Engine(model, { threads: 2, maxModelLen: MAX_MODEL_LEN, blockSize: BLOCK_SIZE, ...options });
  engines.push(e);
  return e;
}

/** Each generated token and its logprob. */
const tokensOf = (outs: StepOutput[]) =>
  outs.flatMap((o) => (o.token ? [[o.token.tokenId, o.token.logprob]] : []));

function greedy(promptTokenIds: number[], maxTokens: number): GenerateRequest {
  return { promptTokenIds, maxTokens, sampling: { temperature: 0 }, logprobs: 0, ignoreEos: true };
}

const TEXTS = [
  "The lamp on the breakwater was lit at dusk, and the boats came in one by one past the harbour wall.",
  "Salt tightens the gluten, so a dough salted early feels firmer.",
  "Tamsin counted the waves and walked in the pauses between them.",
  "Write down the names of the boats and the hour each one came home.",
];

describe.each(portIds.map((id, i) => [id, ports[i] as (typeof ports)[number]] as const))(
  "port %s",
  (portId, ref) => {
    const files = ref.referenceFiles(REFERENCE_SEED);
    const dir = join(work, portId);
    const loaded = writeTinyModel(dir, files).then(() => loadModel(dir));
    const prompts = loaded.then((m) => TEXTS.map((t) => m.tokenizer.encode(t)));

    it("reads its layers' states off the config as the built model declares them, under every switch", async () => {
      const model = await loaded;
      const settings = [
        new Map<string, string>(),
        ...model.model.switches.flatMap((s) => s.values.map((v) => new Map([[s.name, v]]))),
      ];
      for (const switches of settings) {
        expect(model.architecture.states(model.config, switches)).toEqual(model.model.states(switches));
      }
    });

    it("written to disk and loaded, gives the bits of the model built in memory", async () => {
      const fromDisk = await goldenLogprobs(await loaded);
      expect(fromDisk).toEqual(await goldenLogprobs(ref.build(portId, files)));
    });

    it("decoding token by token equals one full forward of the same tokens", async () => {
      const model = await loaded;
      const e = engine(model);
      const prompt = ((await prompts)[0] as number[]).slice(0, 12);
      const decoded = tokensOf(await collect(e.submit(greedy(prompt, 16))));
      const all = [...prompt, ...decoded.map(([t]) => t as number)];
      const [scored] = await collect(e.submit({ promptTokenIds: all, maxTokens: 0, promptLogprobs: 0 }));
      const full = (scored?.promptLogprobs ?? []).slice(prompt.length).map((p) => [p?.tokenId, p?.logprob]);
      expect(full).toEqual(decoded);
    });

    it("gives a request alone the same bits as among 15 others", async () => {
      const model = await loaded;
      const all = await prompts;
      const request = greedy(all[1] as number[], 12);
      const alone = tokensOf(await collect(engine(model).submit(request)));
      const busy = engine(model);
      const others = Array.from({ length: 15 }, (_, i) =>
        collect(busy.submit(greedy((all[i % all.length] as number[]).slice(i % 5), 8 + (i % 7)))),
      );
      const among = collect(busy.submit(request));
      await Promise.all(others);
      expect(tokensOf(await among)).toEqual(alone);
    });

    it("replays planned decode steps bit for bit: 16 streams ending at different steps, greedy and seeded", async () => {
      const model = await loaded;
      const all = await prompts;
      const requests = Array.from({ length: 16 }, (_, i): GenerateRequest => {
        const base = greedy((all[i % all.length] as number[]).slice(i % 5), 6 + (i % 7));
        return i % 2 === 0 ? base : { ...base, sampling: { temperature: 1, seed: 11 + i } };
      });
      const run = async (replay: string) => {
        const e = engine(model, { switches: { replay } });
        const outs = await Promise.all(requests.map((r) => collect(e.submit(r))));
        return { tokens: outs.map(tokensOf), counts: e.replayCounts };
      };
      const on = await run("on");
      const off = await run("off");
      expect(on.tokens).toEqual(off.tokens);
      // The batch shrinks as streams finish: each shape is planned once and replayed after.
      expect(on.counts.plans).toBeGreaterThan(1);
      expect(on.counts.replayedSteps).toBeGreaterThan(0);
      expect(off.counts).toEqual({ plans: 0, replayedSteps: 0 });
    });

    it("chunked prefill equals one prefill", async () => {
      const model = await loaded;
      const prompt = (await prompts).flat().slice(0, 40);
      const score = async (options: EngineOptions) => {
        const [out] = await collect(
          engine(model, options).submit({ promptTokenIds: prompt, maxTokens: 0, promptLogprobs: 2 }),
        );
        return out?.promptLogprobs;
      };
      expect(await score({ maxNumBatchedTokens: 5 })).toEqual(await score({}));
      // Without prompt logprobs the prompt's chunks ask for no logits until the last one.
      const continuation = async (options: EngineOptions) =>
        tokensOf(await collect(engine(model, options).submit(greedy(prompt, 6))));
      expect(await continuation({ maxNumBatchedTokens: 5 })).toEqual(await continuation({}));
    });

    it("preempted and recomputed equals uninterrupted (replayed or not), and holds no KV block or state slot after finish or abort", async () => {
      const model = await loaded;
      const requests = (await prompts).map((p) => greedy(p.slice(0, 14), 20));
      const expected = await Promise.all(requests.map((r) => collect(engine(model).submit(r))));
      // Rings and state slots for three sequences but growing blocks for two of their full 34 tokens:
      // admitted on their prompts' blocks, three outgrow the cache as they decode and the latest is
      // preempted.
      const pools = planKvCache(model.model.states(), "window-sized", BLOCK_SIZE).pools;
      const budget = pools.reduce(
        (sum, g) =>
          sum +
          (g.pool === "slots" || g.placement.ringBlocks > 0 ? 3 : 2.2) * unitsNeeded(g, 34) * unitBytes(g),
        0,
      );
      // Unplanned, then with decode replay (the batch shape changing as sequences leave and return).
      const tightWith = (replay: string) =>
        engine(model, { kvCacheBytes: Math.floor(budget), maxModelLen: 34, switches: { replay } });
      const replayed = tightWith("on");
      const tight = tightWith("off");
      for (const e of [tight, replayed]) {
        const got = await Promise.all(requests.map((r) => collect(e.submit(r))));
        expect(got.map(tokensOf)).toEqual(expected.map(tokensOf));
        expect(e.stats().preemptions).toBeGreaterThan(0);
      }
      expect(replayed.replayCounts.replayedSteps).toBeGreaterThan(0);
      const stop = new AbortController();
      const stream = tight.submit(greedy(requests[0]?.promptTokenIds as number[], 20), stop.signal);
      for await (const out of stream) {
        if (out.token) stop.abort();
      }
      const stats = tight.stats();
      expect([stats.kvBlocksUsed, stats.stateSlotsUsed, stats.running, stats.waiting]).toEqual([0, 0, 0, 0]);
    });

    it("is served from its written directory by `bringup serve`", async () => {
      const program = new Command("bringup").exitOverride();
      const seen: { status?: number; text?: string; slots?: string } = {};
      registerServe(program, async (server: RunningServer) => {
        const response = await fetch(`${server.url}/v1/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: server.modelName, prompt: TEXTS[0], max_tokens: 4, temperature: 0 }),
        });
        seen.status = response.status;
        seen.text = ((await response.json()) as { choices: [{ text: string }] }).choices[0].text;
      });
      const out = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
      try {
        await program.parseAsync(["serve", dir, "--port", "0", "--max-model-len", "128", "--threads", "1"], {
          from: "user",
        });
      } finally {
        out.mockRestore();
      }
      expect(seen.status).toBe(200);
      expect(seen.text?.length).toBeGreaterThan(0);
    });
  },
);
