import { afterAll, describe, expect, it } from "vitest";
import { Engine } from "./engine.js";
import type { LoadedModel } from "./model/loaded-model.js";
import type { StepOutput } from "./request.js";
import { readCorpus } from "./tiny/corpus.js";
import { generateTinyModel, tinyFilesToModel } from "./tiny/generate.js";
import { findTinySize, type TinySize } from "./tiny/sizes.js";

const corpus = await readCorpus();
const tiny = findTinySize("tiny") as TinySize;
const mxfp4Model = await tinyFilesToModel("tiny-mxfp4", generateTinyModel(tiny, corpus, { dtype: "mxfp4" }));
const f32Model = await tinyFilesToModel("tiny-f32", generateTinyModel(tiny, corpus));
const engines: Engine[] = [];
afterAll(() => Promise.all(engines.map((e) => e.close())));

function engine(model: LoadedModel, switches: Record<string, string>): Engine {
  const e = new Engine(model, { threads: 2, maxNumSeqs: 1, switches });
  engines.push(e);
  return e;
}

/** Prompt logprobs (top 5 at every position) and eight greedy tokens with their logprobs. */
async function scored(e: Engine): Promise<StepOutput[]> {
  const out: StepOutput[] = [];
  for await (const o of e.submit({
    promptTokenIds: mxfp4Model.tokenizer.encode("The keeper wrote down the boats before the tide."),
    maxTokens: 8,
    promptLogprobs: 5,
    logprobs: 5,
    sampling: { temperature: 0 },
    ignoreEos: true,
  }))
    out.push(o);
  return out;
}

describe("the mxfp4 switch", () => {
  it("is declared by a model that holds MXFP4 weights, and by no other", () => {
    const declared = mxfp4Model.model.switches.find((s) => s.name === "mxfp4");
    expect(declared?.values).toEqual(["fused", "unpacked", "int8"]);
    expect(f32Model.model.switches.some((s) => s.name === "mxfp4")).toBe(false);
  });

  it("is refused by a model without MXFP4 weights, saying so", () => {
    expect(() => new Engine(f32Model, { threads: 1, switches: { mxfp4: "unpacked" } })).toThrow(
      /holds no MXFP4 weights/,
    );
    expect(() => new Engine(mxfp4Model, { threads: 1, switches: { mxfp4: "packed" } })).toThrow(
      /mxfp4 must be one of fused, unpacked, int8, got "packed"/,
    );
  });

  it("runs the path it names, and the fused and unpacked paths give the same logits bit for bit", async () => {
    const fused = engine(mxfp4Model, { mxfp4: "fused" });
    const unpacked = engine(mxfp4Model, { mxfp4: "unpacked" });
    // Without WebAssembly SIMD there is no fused kernel to choose: both run the plain reference.
    expect(fused.kernels.mxfp4).toBe(fused.kernels.simd ? "fused" : "unpacked");
    expect(unpacked.kernels.mxfp4).toBe("unpacked");
    expect(await scored(fused)).toEqual(await scored(unpacked));
    // The integer path (test/mxfp4-int8.test.ts holds its distance from the reference).
    const int8 = engine(mxfp4Model, { mxfp4: "int8" });
    expect(int8.kernels.mxfp4).toBe(int8.kernels.simd ? "int8" : "unpacked");
  });
});
