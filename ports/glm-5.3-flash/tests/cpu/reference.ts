import { join } from "node:path";
import { loadCatalog } from "../../../../src/catalog/index.js";
import { type LoadedModel, readCorpus, tinyFilesToModel } from "../../../../src/engine/index.js";
import { portModel } from "../../model.js";

const REPO = join(import.meta.dirname, "../../../..");

/** The port's tiny reference config as its manifest states it (validated by the manifest schema). */
export async function referenceConfig(): Promise<Record<string, unknown>> {
  const port = (await loadCatalog(REPO)).ports.find((p) => p.id === "glm-5.3-flash");
  const config = port?.manifest.reference?.config;
  if (config === undefined) throw new Error("ports/glm-5.3-flash/port.yaml has no reference config");
  return config;
}

/** The tiny reference model built in memory with the port's architecture. */
export async function referenceModel(seed = 0): Promise<LoadedModel> {
  const files = portModel.tinyModel(await referenceConfig(), await readCorpus(), { seed });
  return tinyFilesToModel("glm-tiny", files, [portModel.architecture]);
}
