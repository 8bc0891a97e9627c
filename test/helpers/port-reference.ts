import { join } from "node:path";
import { loadCatalog } from "../../src/catalog/index.js";
import { isBringupError } from "../../src/common/errors.js";
import {
  type LoadedModel,
  type PortModel,
  readCorpus,
  type TinyModelFiles,
  tinyFilesToModel,
} from "../../src/engine/index.js";

const REPO = join(import.meta.dirname, "../..");

/** A port's tiny reference config as its manifest states it, and its model built from it, for its tests. */
export function portReference(portId: string, portModel: PortModel) {
  const config = async (): Promise<Record<string, unknown>> => {
    const port = (await loadCatalog(REPO)).ports.find((p) => p.id === portId);
    const reference = port?.manifest.reference?.config;
    if (reference === undefined) throw new Error(`ports/${portId}/port.yaml has no reference config`);
    return reference;
  };
  const files = async (seed = 0): Promise<TinyModelFiles> =>
    portModel.tinyModel(await config(), await readCorpus(), { seed });
  return {
    referenceConfig: config,
    referenceFiles: files,
    /** The tiny reference model built in memory with the port's architecture. */
    referenceModel: async (seed = 0): Promise<LoadedModel> =>
      tinyFilesToModel(`${portId}-tiny`, await files(seed), [portModel.architecture]),
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
