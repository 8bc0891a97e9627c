import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parse } from "yaml";
import { cv, measuredRecord, toolVersion } from "../src/bench/index.js";
import { roundRatio } from "../src/bench/record-builders.js";
import { localResultsDir, RESULTS_DIR } from "../src/catalog/index.js";
import { type LoadedModel, modelOfFiles, readCorpus } from "../src/engine/index.js";
import { deepseekV4Architecture, v4TinyModel } from "../src/engine/models/deepseek-v4.js";
import type { TinyModelFiles } from "../src/engine/tiny/files.js";
import { nextSeriesId, recordIds } from "../src/flow/record-ids.js";
import { appendRecord, localServerFingerprint } from "../src/records/index.js";

export const V4_PORT = "deepseek-v4.1-flash";
export const ROOT = join(import.meta.dirname, "..");

/** DeepSeek-V4.1-Flash's tiny reference as its port.yaml gives it: config, switches, and the corpus. */
export async function v4Reference(): Promise<{
  readonly config: Record<string, unknown>;
  readonly switches: Record<string, string>;
  readonly corpus: string;
}> {
  const manifest = parse(await readFile(join(ROOT, "ports", V4_PORT, "port.yaml"), "utf8")) as {
    reference: { config: Record<string, unknown>; switches?: Record<string, string> };
  };
  return {
    config: manifest.reference.config,
    switches: manifest.reference.switches ?? {},
    corpus: await readCorpus(),
  };
}

/** The tiny weights a config draws (seed 0, as `bringup up` does). */
export function v4Files(config: Record<string, unknown>, corpus: string): TinyModelFiles {
  return v4TinyModel(config, corpus, { seed: 0, port: V4_PORT });
}

/** Those files as a model the engine serves, named after the variant they are (tiny, retrieval). */
export function v4Model(files: TinyModelFiles, variant = "tiny"): LoadedModel {
  return modelOfFiles(`${V4_PORT}-${variant}`, files, deepseekV4Architecture);
}

/** One arm of a V4 A/B as a record keeps it: its trials and the server flags that set it apart. */
export interface V4AbArm {
  readonly name: string;
  readonly samples: readonly number[];
  readonly flags: readonly string[];
}

/**
 * Keeps a tok/s A/B of a tiny variant (arm b against arm a, higher better) as a same-pod-ab record
 * in the local store (.bringup/results/<port>/), under the port as series `id` (a second run of a
 * series gets its next id: records are never rewritten); prints and returns the id it got.
 */
export async function recordV4Ab(ab: {
  readonly id: string;
  /** The variant measured (default tiny), in every arm's fingerprint. */
  readonly variant?: string;
  readonly metric: string;
  readonly label: string;
  readonly context: string;
  readonly command: string;
  readonly flags: readonly string[];
  readonly arms: readonly [V4AbArm, V4AbArm];
  readonly interval: { readonly estimate: number; readonly low: number; readonly high: number };
  /** Each block's b/a ratio, for the record's coefficient of variation. */
  readonly ratios: readonly number[];
}): Promise<string> {
  const fingerprint = (extra: readonly string[]) =>
    localServerFingerprint({
      software: { model: `${V4_PORT}-${ab.variant ?? "tiny"}` },
      server_flags: [...ab.flags, ...extra],
      tool_version: toolVersion(),
    });
  const localDir = localResultsDir(ROOT, V4_PORT);
  const published = join(ROOT, "ports", V4_PORT, RESULTS_DIR);
  const series = `${V4_PORT}/${ab.id}`;
  const record = measuredRecord({
    port: V4_PORT,
    id: nextSeriesId(series, await recordIds(localDir, published)).slice(V4_PORT.length + 1),
    metric: ab.metric,
    label: ab.label,
    unit: "tok/s",
    method: "same-pod-ab",
    context: ab.context,
    command: ab.command,
    arms: ab.arms.map((arm) => ({
      name: arm.name,
      samples: [...arm.samples],
      fingerprint: fingerprint(arm.flags),
    })),
    comparison: {
      figure: { shape: "point", value: roundRatio(ab.interval.estimate) },
      ci95: [roundRatio(ab.interval.low), roundRatio(ab.interval.high)],
      cv: roundRatio(cv([...ab.ratios])),
      better: "higher",
    },
  });
  const saved = await appendRecord(localDir, record);
  console.log(`recorded ${saved.id}`);
  return saved.id;
}
