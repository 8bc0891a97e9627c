import { createHash } from "node:crypto";
import { toolVersion } from "../bench/index.js";
import type { LoadedPort } from "../catalog/index.js";
import type { PortModel } from "../engine/index.js";
import { type CachedModel, cachedModel, weightsCode } from "./model-cache.js";

/** The weight seed of every tiny reference model: the manifest's config alone decides the model. */
export const REFERENCE_SEED = 0;

/** What decides a port's tiny weights besides its config: the tool and the code that makes them. */
export async function weightsParts(port: LoadedPort): Promise<Record<string, string>> {
  return { tool: toolVersion(), ...(await weightsCode(port.dir)) };
}

/**
 * The port's tiny reference checkpoint in `<cacheDir>/<port>/tiny/<key>`: made once from the
 * manifest's reference config, the seed, the corpus and the code that turns them into weights,
 * and reused by every later run (bringup up, bringup device check) with the same parts.
 */
export async function cachedTinyModel(
  port: LoadedPort,
  config: Record<string, unknown>,
  portModel: PortModel,
  corpus: string,
  cacheDir: string,
): Promise<CachedModel> {
  const parts = { config, seed: REFERENCE_SEED, corpus: sha256(corpus), ...(await weightsParts(port)) };
  return cachedModel(cacheDir, `${port.id}/tiny`, parts, () =>
    portModel.tinyModel(config, corpus, { seed: REFERENCE_SEED }),
  );
}

export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
