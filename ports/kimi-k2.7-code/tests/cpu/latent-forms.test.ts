import { describe, expect, it } from "vitest";
import { MlaAttention, RoutedMoe, readCorpus } from "../../../../src/engine/index.js";
import { promptAndGreedy } from "../../../../test/helpers/engine-runs.js";
import { portReference } from "../../../../test/helpers/port-reference.js";

const ref = await portReference("kimi-k2.7-code");

const model = ref.referenceModel();
const corpus = await readCorpus();
const prompt = model.tokenizer.encode(corpus.slice(0, 2000)).slice(0, 200);
/** Prompt logprobs and six greedy tokens of the prompt under `switches`, prefilled in chunks of `chunk`. */
const run = (switches: Record<string, string>, chunk?: number) =>
  promptAndGreedy(model, prompt, { switches, ...(chunk ? { maxNumBatchedTokens: chunk } : {}) });

const maxDiff = (a: readonly number[], b: readonly number[]) =>
  Math.max(...a.map((x, i) => Math.abs(x - (b[i] as number))));

describe("Kimi-K2.7-Code's tiny model on the engine", () => {
  it("keeps 40 floats per token and layer (latent 32 + rotary key 8), and MXFP4 routed experts beside an f32 shared one", () => {
    for (const layer of model.model.layers) {
      expect(layer.mixer).toBeInstanceOf(MlaAttention);
      expect(layer.mixer.states(new Map())).toEqual({
        latent: { kind: "latent", latentDim: 32, ropeDim: 8 },
      });
    }
    const moe = model.model.layers[1]?.ffn;
    expect(moe).toBeInstanceOf(RoutedMoe);
    const experts = (moe as RoutedMoe).experts;
    expect(experts.map((e) => [e.gate.dtype, e.up.dtype, e.down.dtype])).toEqual(
      Array(8).fill(["mxfp4", "mxfp4", "mxfp4"]),
    );
    expect((moe as RoutedMoe).shared?.gate.dtype).toBe("f32");
    expect(model.model.layers[0]?.ffn).not.toBeInstanceOf(RoutedMoe);
  });

  it("absorbed, expanded and vLLM's split forms agree within rounding and pick the same tokens", async () => {
    const absorbed = await run({ mla_form: "absorbed" });
    const expanded = await run({ mla_form: "expanded" });
    const split = await run({ mla_form: "prefill-expanded" }, 64);
    for (const other of [expanded, split]) {
      expect(other.tokens).toEqual(absorbed.tokens);
      // Sums over 32 latent features in another order: logprobs move by rounding only.
      expect(maxDiff(other.logprobs, absorbed.logprobs)).toBeLessThan(1e-4);
    }
    expect(maxDiff(expanded.logprobs, absorbed.logprobs)).toBeGreaterThan(0);
  });

  it("with per-head K/V cached (mla_cache=per-head) gives the expanded form's bits, and the absorbed form's tokens", async () => {
    const perHead = await run({ mla_cache: "per-head" });
    expect(perHead).toEqual(await run({ mla_form: "expanded" }));
    const absorbed = await run({ mla_form: "absorbed" });
    expect(perHead.tokens).toEqual(absorbed.tokens);
    // The same rounding bound as the forms above: sums over the latent in another order.
    expect(maxDiff(perHead.logprobs, absorbed.logprobs)).toBeLessThan(1e-4);
    expect(maxDiff(perHead.logprobs, absorbed.logprobs)).toBeGreaterThan(0);
  });

  it("gives the same bits whatever the prefill chunking in the absorbed form", async () => {
    expect(await run({ mla_form: "absorbed" }, 7)).toEqual(await run({ mla_form: "absorbed" }));
  });
});
