import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import type { Engine } from "../engine.js";
import type { HostTensor } from "../loader/host-tensor.js";
import { v4RetrievalModel, v4TinyModel } from "../models/deepseek-v4.js";
import { collect, engineFactory } from "../tests/engines.js";
import { readCorpus } from "./corpus.js";
import type { TinyModelFiles } from "./files.js";
import { tinyFilesToModel } from "./generate.js";
import { placeV4CopyCircuit, V4_CIRCUIT, v4CircuitAttention } from "./v4-copy-circuit.js";

const corpus = await readCorpus();
// Up to 127 compressed sparse rows, of which the indexer keeps 8.
const CONTEXT = 512;
const reference = parse(
  readFileSync(join(import.meta.dirname, "../../../ports/deepseek-v4.1-flash/port.yaml"), "utf8"),
).reference.config as Record<string, unknown>;
const variant = v4RetrievalModel(reference, corpus, { maxPositionEmbeddings: CONTEXT });

const engines = engineFactory(await tinyFilesToModel("v4-retrieval", variant), {
  maxModelLen: CONTEXT,
  threads: 1,
});

/** Greedy continuation of `prompt`. */
async function greedy(engine: Engine, prompt: number[], maxTokens: number) {
  const steps = await collect(
    engine.submit({ promptTokenIds: prompt, maxTokens, ignoreEos: true, sampling: { temperature: 0 } }),
  );
  return steps.flatMap((s) => (s.token ? [s.token.tokenId] : []));
}

/** A passage hidden in corpus text at `depth` of a ~`length`-token prompt that ends with its first `cut` tokens. */
function hidden(encode: (s: string) => number[], depth: number, length: number, cut: number) {
  const passage = encode(" The ferry left at nine with 31 crates of salt and a goat.");
  const filler = encode(corpus).slice(0, length - passage.length - cut);
  const at = Math.round(depth * filler.length);
  return {
    prompt: [...filler.slice(0, at), ...passage, ...filler.slice(at), ...passage.slice(0, cut)],
    rest: passage.slice(cut),
  };
}

/** `files` with tensor `name`'s values replaced by zeros. */
function zeroed(files: TinyModelFiles, name: string): TinyModelFiles {
  const t = files.tensors.get(name);
  if (t === undefined) throw new Error(`the variant has no tensor ${name}`);
  const tensors = new Map<string, HostTensor>(files.tensors);
  tensors.set(name, { ...t, data: new Float32Array(t.data.length) });
  return { ...files, tensors };
}

describe("placeV4CopyCircuit", () => {
  it("copies what followed a passage hidden at several depths through the compressed rows", async () => {
    const engine = engines();
    const encode = (s: string) => engine.tokenizer.encode(s, { addSpecialTokens: false });
    for (const depth of [0.1, 0.5, 0.9]) {
      const { prompt, rest } = hidden(encode, depth, CONTEXT - 32, 6);
      expect(engine.tokenizer.decode(await greedy(engine, prompt, rest.length))).toBe(
        engine.tokenizer.decode(rest),
      );
    }
  });

  it.each([
    ["attention's", "model.layers.1.self_attn.compressor.position_bias"],
    ["indexer's", "model.layers.1.self_attn.compressor.indexer.position_bias"],
  ])(
    "copies nothing once the %s compressor's position bias (ape) is zero, so rows average their positions",
    async (_, tensor) => {
      const noApe = zeroed(variant, tensor);
      const engine = engines({}, await tinyFilesToModel("no-ape", noApe));
      const encode = (s: string) => engine.tokenizer.encode(s, { addSpecialTokens: false });
      const { prompt, rest } = hidden(encode, 0.5, CONTEXT - 32, 6);
      const out = await greedy(engine, prompt, rest.length);
      expect(out.filter((t, i) => t === rest[i]).length).toBeLessThan(rest.length / 2);
    },
  );

  it("makes the MTP layer draft the copied continuation, and drafting changes no greedy token", async () => {
    const plain = engines();
    const drafting = engines({ speculativeTokens: 3 });
    const encode = (s: string) => plain.tokenizer.encode(s, { addSpecialTokens: false });
    const passage = encode(corpus.slice(0, 600)).slice(0, 120);
    const prompt = [...passage, ...passage.slice(0, 20)];
    const expected = await greedy(plain, prompt, 64);
    expect(expected).toEqual(passage.slice(20, 84));
    expect(await greedy(drafting, prompt, 64)).toEqual(expected);
    const spec = drafting.stats().specDecode;
    expect(spec?.numDraftTokens).toBeGreaterThan(0);
    expect((spec?.numAcceptedTokens ?? 0) / (spec?.numDraftTokens ?? 1)).toBeGreaterThan(0.9);
  });

  it("refuses an attention whose heads are grouped in the output projection, naming o_groups", async () => {
    const config = { ...reference, ...v4CircuitAttention(), o_groups: 2 };
    const files = v4TinyModel(config, corpus);
    const model = await tinyFilesToModel("grouped", files);
    expect(() => placeV4CopyCircuit(files, model, V4_CIRCUIT)).toThrow(
      expect.objectContaining({
        code: "RETRIEVAL_CONFIG_INVALID",
        message: expect.stringMatching(/o_groups/),
      }),
    );
  });
});
