import { randomBytes } from "node:crypto";
import { access, mkdir, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { BringupError } from "./errors.js";

/** A sibling temporary name, so the final rename stays on one filesystem. */
export function temporarySibling(path: string): string {
  return `${path}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
}

/** Writes a whole file or nothing: a reader never sees a half-written file. Pieces are written in order. */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array | Iterable<string>,
): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = temporarySibling(path);
  try {
    await writeFile(tmp, data);
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
}

/**
 * Builds a directory under a temporary name and renames it into place only when `fill` succeeds.
 * Fails if `path` already exists, so nothing of a user's is replaced.
 */
export async function writeDirectoryAtomic(
  path: string,
  fill: (tmpDir: string) => Promise<void>,
): Promise<void> {
  if (await exists(path)) {
    throw new BringupError(
      "OUTPUT_EXISTS",
      `${path} already exists; choose a new output path or remove it first.`,
      {
        subject: path,
      },
    );
  }
  await mkdir(dirname(path), { recursive: true });
  const tmp = join(dirname(path), `.${temporarySibling(path).split("/").pop()}`);
  await mkdir(tmp);
  try {
    await fill(tmp);
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { recursive: true, force: true });
    throw error;
  }
}

export async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
