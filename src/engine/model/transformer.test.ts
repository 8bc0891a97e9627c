import { afterAll, describe, expect, it } from "vitest";
import { LayerKvCache } from "../cache/kv-cache.js";
import { SlidingMaskCacheSpec } from "../cache/sliding-mask-spec.js";
import { SlidingWindowCacheSpec } from "../cache/sliding-window-spec.js";
import { type CacheSpec, FullCacheSpec } from "../cache/spec.js";
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

describe("transformer with sliding-window layers (sinks, narrow value heads)", () => {
  it("decoding through a ring of blocks equals one full forward pass with a sliding mask, across window, block and ring boundaries", async () => {
    const base = withSinksAndNarrowValues(
      await createTinyModel(findTinySize("tiny") as TinySize, { seed: 3 }),
    );
    const window = 6;
    const blockSize = 4;
    // Layer 1 global, the others sliding.
    const layers = base.config.layers.map((l, i) =>
      i === 1 ? l : { ...l, attention: { ...l.attention, kind: "sliding" as const, window } },
    );
    const config = { ...base.config, layers };
    const caches = (sliding: CacheSpec) =>
      layers.map(
        (l) =>
          new LayerKvCache(
            l.attention.kind === "sliding" ? sliding : new FullCacheSpec(blockSize),
            32,
            l.attention.numKvHeads,
            l.attention.headDim,
            l.attention.vHeadDim,
          ),
      );
    const ring = new SlidingWindowCacheSpec(blockSize, window);
    expect([ring.ringBlocks, ring.maxChunkTokens]).toEqual([4, 8]);
    const reference = new Transformer(
      config,
      base.weights,
      pool,
      caches(new SlidingMaskCacheSpec(blockSize, window)),
      layers.map(() => 0),
    );
    const ringed = new Transformer(
      config,
      base.weights,
      pool,
      caches(ring),
      layers.map((l) => (l.attention.kind === "sliding" ? 0 : 1)),
    );
    const V = config.vocabSize;
    const tokens = base.tokenizer.encode(
      "The fog came in twice a day, once with the morning tide and once at dusk, and the lamp keeper wrote both down.",
    );
    const n = tokens.length;
    // The ring (16 slots) wraps at least twice.
    expect(n).toBeGreaterThan(2 * 16 + window);
    const all = [Array.from({ length: Math.ceil(n / blockSize) }, (_, i) => i)];
    const full = reference.forward({
      tokens,
      positions: tokens.map((_, i) => i),
      blockTables: tokens.map(() => all),
      logitRows: tokens.map((_, i) => i),
    });
    // Scattered blocks: a ring of 4 for the sliding layers, a growing table for the global one.
    const tables = [[21, 6, 13, 2], Array.from({ length: Math.ceil(n / blockSize) }, (_, i) => 31 - i)];
    const chunks = [5, 8, 1, 1, 3, 8, 2, 7];
    let start = 0;
    for (let c = 0; start < n; c++) {
      const count = Math.min(chunks[c] ?? 1, n - start);
      const positions = Array.from({ length: count }, (_, i) => start + i);
      const logits = ringed.forward({
        tokens: tokens.slice(start, start + count),
        positions,
        blockTables: positions.map(() => tables),
        logitRows: positions.map((_, i) => i),
      });
      expect(Array.from(logits)).toEqual(Array.from(full.subarray(start * V, (start + count) * V)));
      start += count;
    }
  });
});

describe("transformer value scale", () => {
  it("scaling values by 0.5 gives the bits of a v_proj halved (a power of two scales exactly)", async () => {
    const model = await createTinyModel(findTinySize("tiny") as TinySize, { seed: 3 });
    const run = (config: LoadedModel["config"], weights: LoadedModel["weights"]) => {
      const caches = config.layers.map(
        (l) =>
          new LayerKvCache(
            new FullCacheSpec(4),
            8,
            l.attention.numKvHeads,
            l.attention.headDim,
            l.attention.vHeadDim,
          ),
      );
      const t = new Transformer(
        config,
        weights,
        pool,
        caches,
        caches.map(() => 0),
      );
      const tokens = model.tokenizer.encode("Nine boats came home.");
      const table = [Array.from({ length: 8 }, (_, i) => i)];
      return t.forward({
        tokens,
        positions: tokens.map((_, i) => i),
        blockTables: tokens.map(() => table),
        logitRows: [tokens.length - 1],
      });
    };
    const scaled = {
      ...model.config,
      layers: model.config.layers.map((l) => ({ ...l, attention: { ...l.attention, valueScale: 0.5 } })),
    };
    const halved = {
      ...model.weights,
      layers: model.weights.layers.map((lw) => {
        const v = lw.attention.v;
        const data = Float32Array.from(v.data as Float32Array, (x) => x * 0.5);
        return { ...lw, attention: { ...lw.attention, v: f32Weight(v.rows, v.cols, data) } };
      }),
    };
    const a = run(scaled, model.weights);
    expect(Array.from(a)).toEqual(Array.from(run(model.config, halved)));
    expect(Array.from(a)).not.toEqual(Array.from(run(model.config, model.weights)));
  });
});
