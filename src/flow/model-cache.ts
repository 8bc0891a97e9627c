import { createHash } from "node:crypto";
import { access, readdir, readFile } from "node:fs/promises";
import { join, relative, sep } from "node:path";
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

/** The source of the code that turns a port's config into weights: the engine (its model families and blocks) and its codecs. */
export const WEIGHTS_CODE_DIRS: readonly string[] = [
  join(import.meta.dirname, "..", "engine"),
  join(import.meta.dirname, "..", "formats"),
];

/**
 * A short sha256 of every file under `dirs` except tests, by path (relative to its dir) and
 * content in path order: the same sources give the same digest wherever the tree is checked out.
 */
export async function sourceDigest(dirs: readonly string[]): Promise<string> {
  const hash = createHash("sha256");
  for (const [index, dir] of dirs.entries()) {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    const files = entries
      .filter((e) => e.isFile())
      .map((e) => relative(dir, join(e.parentPath, e.name)).split(sep).join("/"))
      .filter((path) => !/\.test\.[cm]?[jt]s$/.test(path) && !path.split("/").includes("tests"))
      .sort();
    for (const path of files) {
      hash.update(`${index}/${path}\0`);
      hash.update(await readFile(join(dir, path)));
      hash.update("\0");
    }
  }
  return hash.digest("hex").slice(0, 16);
}

/**
 * The code that turns a port's config into weights, as a cache-key part: the sources under `dirs`
 * (the engine's model families and blocks, and the codecs), so editing them makes new weights.
 */
export async function weightsCode(
  dirs: readonly string[] = WEIGHTS_CODE_DIRS,
): Promise<{ engine_code: string }> {
  return { engine_code: await sourceDigest(dirs) };
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
