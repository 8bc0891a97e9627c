// A port's reference section and model code, and its tiny weights made once and cached on disk.
import { join } from "node:path";
import { type LoadedPort, loadCatalog, type Reference } from "../catalog/index.js";
import { BringupError, isBringupError } from "../common/errors.js";
import { type Architecture, findArchitecture, type LoadedModel, loadModel } from "../engine/index.js";
import type { BringUpOptions } from "./bring-up-options.js";
import { cachedModel } from "./model-cache.js";
import { cachedTinyModel, REFERENCE_SEED, sha256, weightsParts } from "./tiny-model.js";

/** The port with its reference section and model code, or a BringupError naming what it lacks. */
export async function loadPort(
  root: string,
  portId: string,
  external: boolean,
): Promise<{ port: LoadedPort; reference: Reference; portModel?: Architecture }> {
  const catalog = await loadCatalog(root);
  const port = catalog.ports.find((p) => p.id === portId);
  if (port === undefined) {
    throw new BringupError(
      "PORT_UNKNOWN",
      `there is no port "${portId}"; \`bringup ports list\` names them.`,
      { subject: portId },
    );
  }
  const reference = port.manifest.reference;
  if (reference === undefined) {
    throw new BringupError(
      "PORT_NO_REFERENCE",
      `port ${portId} has no tiny reference config: add a \`reference:\` section to ports/${portId}/port.yaml (a small \`config\` of its architecture, \`max_model_len\`, the \`gates\` and \`benchmarks\` to run; see ports/README.md), then run bringup up ${portId} again.`,
      { subject: portId },
    );
  }
  if (external) return { port, reference };
  const portModel = await findArchitecture(
    reference.config,
    `ports/${portId}/port.yaml reference.config`,
  ).catch((error: unknown) => {
    if (!isBringupError(error)) throw error;
    throw new BringupError(
      "PORT_NO_MODEL_CODE",
      `port ${portId} has no model code for the embedded engine: ${error.message} Or run its gates against a server with --endpoint URL.`,
      { subject: portId, cause: error },
    );
  });
  if (portModel.tinyModel === undefined) {
    throw new BringupError(
      "PORT_NO_MODEL_CODE",
      `port ${portId}'s family makes no tiny reference model from a config: give its Architecture a tinyModel (src/engine/models/), or run its gates against a server with --endpoint URL.`,
      { subject: portId },
    );
  }
  return { port, reference, portModel };
}

/** The tiny reference model (and the retrieval variant when a needle gate asks for it), cached on disk. */
export async function makeWeights(
  port: LoadedPort,
  reference: Reference,
  portModel: Architecture,
  corpus: string,
  retrievalGates: readonly { contexts: readonly number[] }[],
  needleContexts: readonly number[] | undefined,
  options: BringUpOptions,
) {
  const cacheDir = modelCacheDir(options);
  // What decides the bytes: the config, the seed, the corpus and the code that turns them into
  // weights (the engine's model families and blocks, and the codecs they build on).
  const code = await weightsParts();
  const corpusHash = sha256(corpus);
  const tiny = await cachedTinyModel(port.id, reference.config, portModel, corpus, cacheDir);
  const made = [`tiny ${tiny.reused ? "reused" : "made"} (${tiny.dir})`];
  const tinyModel = await loadModel(tiny.dir);
  let retrieval: LoadedModel | undefined;
  const longest = Math.max(0, ...retrievalGates.flatMap((g) => needleContexts ?? g.contexts));
  const make = portModel.retrievalModel?.bind(portModel);
  const retrievalOptions = { maxPositionEmbeddings: longest, seed: REFERENCE_SEED, port: port.id };
  const retrievalFiles = longest > 0 ? make?.(reference.config, corpus, retrievalOptions) : undefined;
  if (retrievalFiles !== undefined) {
    const cached = await cachedModel(
      cacheDir,
      `${port.id}/retrieval`,
      { max_position_embeddings: longest, corpus: corpusHash, ...code },
      () => retrievalFiles,
    );
    retrieval = await loadModel(cached.dir);
    made.push(`retrieval variant ${cached.reused ? "reused" : "made"}`);
  }
  return {
    value: { tiny: tinyModel, ...(retrieval ? { retrieval } : {}) },
    detail: made.join("; "),
  };
}

export function modelCacheDir(options: BringUpOptions): string {
  return options.cacheDir ?? join(options.root, ".cache", "bringup", "models");
}
