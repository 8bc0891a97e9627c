import { join } from "node:path";
import { loadCatalog } from "../../../../src/catalog/index.js";
import {
  type LoadedModel,
  readCorpus,
  type TinyModelFiles,
  tinyFilesToModel,
} from "../../../../src/engine/index.js";
import { portModel } from "../../model.js";

const REPO = join(import.meta.dirname, "../../../..");

/** The port's tiny reference config as its manifest states it (validated by the manifest schema). */
export async function referenceConfig(): Promise<Record<string, unknown>> {
  const port = (await loadCatalog(REPO)).ports.find((p) => p.id === "kimi-k2.7-code");
  const config = port?.manifest.reference?.config;
  if (config === undefined) throw new Error("ports/kimi-k2.7-code/port.yaml has no reference config");
  return config;
}

export async function referenceFiles(seed = 0): Promise<TinyModelFiles> {
  return portModel.tinyModel(await referenceConfig(), await readCorpus(), { seed });
}

/** The tiny reference model built in memory with the port's architecture. */
export async function referenceModel(seed = 0): Promise<LoadedModel> {
  return tinyFilesToModel("kimi-tiny", await referenceFiles(seed), [portModel.architecture]);
}
