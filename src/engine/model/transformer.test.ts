import { afterAll, describe, expect, it } from "vitest";
import { LayerKvCache } from "../cache/kv-cache.js";
import { FullCacheSpec } from "../cache/spec.js";
import { MatmulPool } from "../kernels/pool.js";
import { Rng } from "../tensor/random.js";
import { f32Weight } from "../tensor/weight.js";
import { createTinyModel } from "../tiny/generate.js";
import { findTinySize, type TinySize } from "../tiny/sizes.js";
import type { LoadedModel } from "./loaded-model.js";
import { Transformer } from "./transformer.js";

const pool = new MatmulPool(2);
afterAll(() => pool.close());

async function build(sizeName: string) {
  const tiny = await createTinyModel(findTinySize(sizeName) as TinySize, { seed: 3 });
  const model = sizeName === "tiny" ? withSinksAndNarrowValues(tiny) : tiny;
  const spec = new FullCacheSpec(4);
  const caches = model.config.layers.map(
    (l) => new LayerKvCache(spec, 32, l.attention.numKvHeads, l.attention.headDim, l.attention.vHeadDim),
  );
  return {
    model,
    t: new Transformer(
      model.config,
      model.weights,
      pool,
      caches,
      caches.map(() => 0),
    ),
  };
}

/**
 * The tiny model changed to value heads of 8 (query/key heads stay 16) and a learned sink logit
 * per head, the two attention features later ports need.
 */
function withSinksAndNarrowValues(model: LoadedModel): LoadedModel {
  const rng = new Rng(11);
  const vHeadDim = 8;
  const layers = model.config.layers.map((l) => ({
    ...l,
    attention: { ...l.attention, vHeadDim, sinks: true },
  }));
  const H = model.config.hiddenSize;
  const weights = {
    ...model.weights,
    layers: model.weights.layers.map((lw, i) => {
      const a = (layers[i] as (typeof layers)[number]).attention;
      return {
        ...lw,
        attention: {
          ...lw.attention,
          v: f32Weight(
            a.numKvHeads * vHeadDim,
            H,
            rng.fillNormal(new Float32Array(a.numKvHeads * vHeadDim * H), 0.05),
          ),
          o: f32Weight(
            H,
            a.numHeads * vHeadDim,
            rng.fillNormal(new Float32Array(H * a.numHeads * vHeadDim), 0.05),
          ),
          sinks: rng.fillNormal(new Float32Array(a.numHeads), 1),
        },
      };
    }),
  };
  return { ...model, config: { ...model.config, layers }, weights };
}

describe.each(["tiny", "tiny-moe"])(
  "transformer %s (tiny: with sinks and value heads narrower than key heads)",
  (sizeName) => {
    it("gives the same logits decoding token by token as one full forward pass", async () => {
      const { model, t } = await build(sizeName);
      const V = model.config.vocabSize;
      const tokens = model.tokenizer.encode("The fog came in twice a day, once with the morning tide.");
      const n = tokens.length;
      const table = [Array.from({ length: Math.ceil(n / 4) }, (_, i) => i)];
      const full = t.forward({
        tokens,
        positions: tokens.map((_, i) => i),
        blockTables: tokens.map(() => table),
        logitRows: tokens.map((_, i) => i),
      });
      // A second sequence in other blocks: prefill 5 tokens, then one token per step.
      const other = [Array.from({ length: Math.ceil(n / 4) }, (_, i) => 16 + i)];
      const prefix = 5;
      const first = t.forward({
        tokens: tokens.slice(0, prefix),
        positions: [0, 1, 2, 3, 4],
        blockTables: tokens.slice(0, prefix).map(() => other),
        logitRows: [prefix - 1],
      });
      expect(Array.from(first)).toEqual(Array.from(full.subarray((prefix - 1) * V, prefix * V)));
      for (let p = prefix; p < n; p++) {
        const step = t.forward({
          tokens: [tokens[p] as number],
          positions: [p],
          blockTables: [other],
          logitRows: [0],
        });
        expect(Array.from(step)).toEqual(Array.from(full.subarray(p * V, (p + 1) * V)));
      }
    });
  },
);
