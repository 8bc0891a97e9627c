import { planKvCache } from "../../cache/capacity.js";
import { type LayerStorage, layerStorage } from "../../cache/storage.js";
import type { MatmulPool } from "../../kernels/pool.js";
import type { ForwardContext, TokenMixer } from "../../model/model.js";
import { Rng } from "../../tensor/random.js";
import { f32Weight } from "../../tensor/weight.js";
import { MlaAttention, type MlaSpec, mlaNames, mlaShapes } from "./mla-attention.js";

/** Tests' shared setup: a random MLA layer and steps of one sequence over its own paged cache. */

export const MLA_TEST_SPEC: MlaSpec = {
  numHeads: 3,
  qLoraRank: 12,
  kvLoraRank: 16,
  qkNopeHeadDim: 8,
  qkRopeHeadDim: 6,
  vHeadDim: 5,
  ropeTheta: 10_000,
};
export const MLA_TEST_HIDDEN = 20;
export const BLOCK_SIZE = 4;

/** The raw f32 matrices [rows, cols] of a random MLA layer, for the block and a reference alike. */
export interface MlaMatrices {
  readonly qA: Float32Array;
  readonly qANorm: Float32Array;
  readonly qB: Float32Array;
  readonly kvA: Float32Array;
  readonly kvANorm: Float32Array;
  readonly kvB: Float32Array;
  readonly o: Float32Array;
}

export function randomMla(seed: number, spec: MlaSpec = MLA_TEST_SPEC, H = MLA_TEST_HIDDEN): MlaMatrices {
  const rng = new Rng(seed);
  const shape = mlaShapes(spec, H);
  const m = ([rows, cols]: readonly [number, number]) =>
    rng.fillNormal(new Float32Array(rows * cols), 1 / Math.sqrt(cols));
  const norm = (n: number) => Float32Array.from({ length: n }, () => 1 + 0.2 * rng.normal());
  return {
    qA: m(shape.qA),
    qANorm: norm(spec.qLoraRank),
    qB: m(shape.qB),
    kvA: m(shape.kvA),
    kvANorm: norm(spec.kvLoraRank),
    kvB: m(shape.kvB),
    o: m(shape.o),
  };
}

export function mlaBlock(m: MlaMatrices, spec: MlaSpec = MLA_TEST_SPEC, H = MLA_TEST_HIDDEN): MlaAttention {
  const shape = mlaShapes(spec, H);
  return new MlaAttention(
    spec,
    {
      qA: f32Weight(...shape.qA, m.qA),
      qANorm: m.qANorm,
      qB: f32Weight(...shape.qB, m.qB),
      kvA: f32Weight(...shape.kvA, m.kvA),
      kvANorm: m.kvANorm,
      kvB: f32Weight(...shape.kvB, m.kvB),
      o: f32Weight(...shape.o, m.o),
    },
    mlaNames("model.layers.0"),
    H,
    1e-6,
  );
}

/**
 * Runs `block` (any token mixer: MLA here, grouped-query attention in models/gpt-oss.test.ts) over
 * one sequence's hidden states x [n, H] in steps of `chunks` tokens each (their sum n), with the
 * switches given; returns the outputs [n, H] and the layer's storage, planned and allocated as
 * the engine does.
 */
export function runSequence(
  block: TokenMixer,
  x: Float32Array,
  chunks: readonly number[],
  pool: MatmulPool,
  switches: ReadonlyMap<string, string>,
  H = MLA_TEST_HIDDEN,
): { out: Float32Array; storage: LayerStorage } {
  const [run] = runLayers([block], x, chunks, pool, switches, H);
  return run as { out: Float32Array; storage: LayerStorage };
}

/**
 * runSequence for several layers stepped together, as a model runs them: each step runs every
 * layer in order over that step's tokens of x (each layer reads x itself, not its predecessor's
 * output), each layer with its own storage.
 */
export function runLayers(
  layers: readonly TokenMixer[],
  x: Float32Array,
  chunks: readonly number[],
  pool: MatmulPool,
  switches: ReadonlyMap<string, string>,
  H = MLA_TEST_HIDDEN,
): { out: Float32Array; storage: LayerStorage }[] {
  const n = chunks.reduce((a, b) => a + b, 0);
  const plan = planKvCache(
    layers.map((l) => l.states(switches)),
    "full",
    BLOCK_SIZE,
  );
  const blocks = Math.ceil(n / BLOCK_SIZE);
  const runs = layers.map((_, i) => ({
    out: new Float32Array(n * H),
    storage: layerStorage(plan.layers[i] ?? [], [blocks + 2]),
  }));
  // A table that is not the identity, so slots are read through it.
  const table = Array.from({ length: blocks }, (_, b) => blocks + 1 - b);
  let first = 0;
  for (const count of chunks) {
    const positions = Array.from({ length: count }, (_, i) => first + i);
    const ctx: ForwardContext = {
      pool,
      switches,
      batch: {
        tokens: new Int32Array(count),
        positions,
        blockTables: positions.map(() => [table]),
        sequences: [{ first: 0, count, slot: -1 }],
        logitRows: [],
      },
    };
    layers.forEach((layer, i) => {
      const run = runs[i] as (typeof runs)[number];
      run.out.set(layer.forward(x.slice(first * H, (first + count) * H), ctx, run.storage), first * H);
    });
    first += count;
  }
  return runs;
}

export function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs((a[i] as number) - (b[i] as number)));
  return d;
}
