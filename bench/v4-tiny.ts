import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parse } from "yaml";
import { type LoadedModel, modelOfFiles, readCorpus } from "../src/engine/index.js";
import { deepseekV4Architecture, v4TinyModel } from "../src/engine/models/deepseek-v4.js";
import type { TinyModelFiles } from "../src/engine/tiny/files.js";

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

/** Those files as a model the engine serves. */
export function v4Model(files: TinyModelFiles): LoadedModel {
  return modelOfFiles(`${V4_PORT}-tiny`, files, deepseekV4Architecture);
}
