import { createHash } from "node:crypto";
import { DEFAULT_TOKEN_RANGE, type TokenRange, toolVersion } from "../bench/index.js";
import { BringupError } from "../common/errors.js";
import type { Architecture, LoadedModel } from "../engine/index.js";
import { type CachedModel, cachedModel, weightsCode } from "./model-cache.js";

/** The weight seed of every tiny reference model: the manifest's config alone decides the model. */
export const REFERENCE_SEED = 0;

/** What decides a port's tiny weights besides its config: the tool and the code that makes them. */
export async function weightsParts(): Promise<Record<string, string>> {
  return { tool: toolVersion(), ...(await weightsCode()) };
}

/**
 * The port's tiny reference checkpoint in `<cacheDir>/<port>/tiny/<key>`: made once by the family's
 * tinyModel from the manifest's reference config, the seed, the corpus and the code that turns them
 * into weights (the engine's families and blocks, and the codecs they build on), and reused by every
 * later run with the same parts (bringup up, bringup device check).
 */
export async function cachedTinyModel(
  portId: string,
  config: Record<string, unknown>,
  family: Architecture,
  corpus: string,
  cacheDir: string,
): Promise<CachedModel> {
  const make = family.tinyModel?.bind(family);
  if (make === undefined) {
    throw new BringupError(
      "PORT_NO_MODEL_CODE",
      `port ${portId}'s family makes no tiny reference model from a config: give its Architecture a tinyModel (src/engine/models/).`,
      { subject: portId },
    );
  }
  const parts = { config, seed: REFERENCE_SEED, corpus: sha256(corpus), ...(await weightsParts()) };
  return cachedModel(cacheDir, `${portId}/tiny`, parts, () =>
    make(config, corpus, { seed: REFERENCE_SEED, port: portId }),
  );
}

/** Token ids the seeded A/B and sweep prompts are drawn from: the bench's range, inside the model's vocabulary. */
export function promptTokens(model: LoadedModel): TokenRange {
  return { low: DEFAULT_TOKEN_RANGE.low, high: Math.min(DEFAULT_TOKEN_RANGE.high, model.config.vocabSize) };
}

export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
