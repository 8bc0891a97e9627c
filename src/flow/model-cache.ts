import { createHash } from "node:crypto";
import { access, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { isBringupError } from "../common/errors.js";
import { type TinyModelFiles, writeTinyModel } from "../engine/index.js";

/** A model directory in the cache, and whether this run found it there or made it. */
export interface CachedModel {
  readonly dir: string;
  readonly key: string;
  readonly reused: boolean;
}

/** The cache key: a short sha256 of everything that decides the bytes (JSON of `parts`, keys in order). */
export function cacheKey(parts: Record<string, unknown>): string {
  return createHash("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 16);
}

/**
 * The model directory `<cacheDir>/<name>/<key of parts>`, made with `make` and written atomically
 * when absent; a later run with the same parts reuses it. `make` must be deterministic in `parts`.
 */
export async function cachedModel(
  cacheDir: string,
  name: string,
  parts: Record<string, unknown>,
  make: () => TinyModelFiles,
): Promise<CachedModel> {
  const key = cacheKey(parts);
  const dir = join(cacheDir, name, key);
  if (await complete(dir)) return { dir, key, reused: true };
  try {
    await writeTinyModel(dir, make());
  } catch (error) {
    // Another run wrote the same model first; its directory is whole (written atomically) and equal.
    if (isBringupError(error) && error.code === "OUTPUT_EXISTS") return { dir, key, reused: true };
    throw error;
  }
  return { dir, key, reused: false };
}

/** sha256 over a model directory's safetensors files, in name order: the fingerprint's weights checksum. */
export async function weightsChecksum(dir: string): Promise<string> {
  const hash = createHash("sha256");
  const files = (await readdir(dir)).filter((name) => name.endsWith(".safetensors")).sort();
  for (const name of files) hash.update(await readFile(join(dir, name)));
  return `sha256:${hash.digest("hex")}`;
}

async function complete(dir: string): Promise<boolean> {
  try {
    await access(join(dir, "config.json"));
    await access(join(dir, "model.safetensors"));
    return true;
  } catch {
    return false;
  }
}
