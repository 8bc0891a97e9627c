import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { type WeightsConversion as Conversion, conversionKey, type Reference } from "../catalog/index.js";
import { type LoadedModel, loadModel } from "../engine/index.js";
import { convertWeights, packCheckpoint } from "../formats/index.js";

/**
 * Every conversion the reference section asks for: what weights gates compare, what gates'
 * baselines and A/B arms serve.
 */
export function referenceConversions(reference: Reference): Conversion[] {
  const gates = reference.gates.flatMap((gate) => {
    if (gate.kind === "weights-bit-identity") return gate.convert ? [gate.convert] : [];
    return "baseline" in gate && gate.baseline?.weights ? [gate.baseline.weights] : [];
  });
  const arms = reference.benchmarks.flatMap((spec) => [spec.a.weights, spec.b.weights]);
  const all = [...gates, ...arms.filter((w): w is Conversion => w !== undefined)];
  return [...new Map(all.map((c) => [conversionKey(c), c])).values()];
}

/** The converted checkpoints of one bring-up, loaded, and the directory that holds them all. */
export interface ConvertedWeights {
  readonly workDir: string;
  readonly models: ReadonlyMap<string, LoadedModel>;
}

/**
 * Converts the tiny checkpoint at `source` once per conversion, with the code of `bringup weights
 * convert` (or `weights pack`), into a fresh directory under `parent` (each output appears whole or not at all), and
 * loads each. The caller removes `workDir` when the run ends (removeConverted); a failed conversion
 * removes it here.
 */
export async function convertReferenceWeights(
  source: string,
  conversions: readonly Conversion[],
  parent: string,
  signal?: AbortSignal,
): Promise<ConvertedWeights> {
  await mkdir(parent, { recursive: true });
  const workDir = await mkdtemp(join(parent, "converted-"));
  try {
    const models = new Map<string, LoadedModel>();
    for (const conversion of conversions) {
      const key = conversionKey(conversion);
      const dir = join(workDir, key);
      if (conversion.to === "packed") await packCheckpoint(source, dir, conversion.ranks ?? 1);
      else
        await convertWeights(source, dir, {
          to: conversion.to,
          ...(conversion.fp8_block !== undefined ? { fp8Block: conversion.fp8_block } : {}),
          ...(conversion.layout !== undefined ? { layout: conversion.layout } : {}),
          workers: 0,
          ...(signal !== undefined ? { signal } : {}),
        });
      models.set(key, await loadModel(dir, { name: key }));
    }
    return { workDir, models };
  } catch (error) {
    await removeConverted(workDir);
    throw error;
  }
}

export async function removeConverted(workDir: string): Promise<void> {
  await rm(workDir, { recursive: true, force: true });
}
