import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { PortManifest } from "../../../../src/catalog/index.js";
import {
  type LoadedModel,
  loadModel,
  type TinyModelFiles,
  writeTinyModel,
} from "../../../../src/engine/index.js";

/** The port's tiny reference config as its manifest states it (validated by the manifest schema). */
export async function referenceConfig(): Promise<Record<string, unknown>> {
  const text = await readFile(join(import.meta.dirname, "..", "..", "port.yaml"), "utf8");
  const config = PortManifest.parse(parse(text)).reference?.config;
  if (config === undefined) throw new Error("ports/mimo-v2.6-flash/port.yaml has no reference config");
  return config;
}

/** Loads model files the way `bringup up` does: written as a model directory, read by the engine's loader. */
export async function loadFiles(files: TinyModelFiles, name: string): Promise<LoadedModel> {
  const parent = await mkdtemp(join(tmpdir(), "mimo-port-"));
  try {
    const dir = join(parent, name);
    await writeTinyModel(dir, files);
    return await loadModel(dir, { name });
  } finally {
    await rm(parent, { recursive: true, force: true });
  }
}
