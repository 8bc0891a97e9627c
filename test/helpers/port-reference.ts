import { join } from "node:path";
import { loadCatalog } from "../../src/catalog/index.js";
import { isBringupError } from "../../src/common/errors.js";
import {
  type Architecture,
  findArchitecture,
  type LoadedModel,
  modelOfFiles,
  readCorpus,
  type TinyModelFiles,
} from "../../src/engine/index.js";

const REPO = join(import.meta.dirname, "../..");

/** Every port with a tiny reference config (each runs on the embedded engine), by id. */
export async function referencePortIds(): Promise<string[]> {
  return (await loadCatalog(REPO)).ports.filter((p) => p.manifest.reference !== undefined).map((p) => p.id);
}

/** A port's tiny reference config as its manifest states it. */
export async function referenceConfig(portId: string): Promise<Record<string, unknown>> {
  const port = (await loadCatalog(REPO)).ports.find((p) => p.id === portId);
  const reference = port?.manifest.reference?.config;
  if (reference === undefined) throw new Error(`ports/${portId}/port.yaml has no reference config`);
  return reference;
}

/**
 * A port's reference config, the engine's model family that reads it, and its tiny and retrieval
 * models built from them, for its tests.
 */
export async function portReference(portId: string) {
  const config = await referenceConfig(portId);
  const architecture: Architecture = await findArchitecture(config, `ports/${portId}/port.yaml`);
  const corpus = await readCorpus();
  const files = (seed = 0): TinyModelFiles => {
    const make = architecture.tinyModel;
    if (make === undefined) throw new Error(`${portId}'s family makes no tiny model`);
    return make(config, corpus, { seed, port: portId });
  };
  const retrievalFiles = (maxPositionEmbeddings: number): TinyModelFiles => {
    const files = architecture.retrievalModel?.(config, corpus, { maxPositionEmbeddings, port: portId });
    if (files === undefined) throw new Error(`${portId}'s family makes no retrieval variant`);
    return files;
  };
  return {
    referenceConfig: config,
    architecture,
    corpus,
    referenceFiles: files,
    retrievalFiles,
    /** Model files built in memory by the port's family. */
    build: (name: string, built: TinyModelFiles): LoadedModel => modelOfFiles(name, built, architecture),
    /** The tiny reference model built in memory by the port's family. */
    referenceModel: (seed = 0): LoadedModel => modelOfFiles(`${portId}-tiny`, files(seed), architecture),
  };
}

/** The code and message of the BringupError `run` throws; fails the test when it throws none. */
export function bringupErrorOf(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (error) {
    if (isBringupError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("no BringupError was thrown");
}
