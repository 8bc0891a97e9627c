import { randomBytes } from "node:crypto";
import { mkdir, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { ErrorCode } from "./error-catalogue.js";
import { BringupError } from "./errors.js";

/** What to tell a person for each filesystem error a write can meet. */
const ERRNO_ADVICE: Record<string, { code: ErrorCode; what: string; next: string }> = {
  EACCES: {
    code: "FS_PERMISSION_DENIED",
    what: "permission denied",
    next: "choose a path you can write, or fix its permissions",
  },
  EPERM: {
    code: "FS_PERMISSION_DENIED",
    what: "operation not permitted",
    next: "choose a path you can write, or fix its permissions",
  },
  EROFS: {
    code: "FS_READ_ONLY",
    what: "the filesystem is read-only",
    next: "choose a path on a writable filesystem",
  },
  ENOSPC: {
    code: "FS_DISK_FULL",
    what: "no space left on the device",
    next: "free some space or choose a path on another disk",
  },
  EDQUOT: {
    code: "FS_DISK_FULL",
    what: "the disk quota is used up",
    next: "free some space or choose a path on another disk",
  },
  ENOTDIR: {
    code: "FS_NOT_DIRECTORY",
    what: "a part of the path is a file, not a directory",
    next: "choose another path, or move that file away",
  },
  EISDIR: {
    code: "FS_IS_DIRECTORY",
    what: "it is a directory where a file was expected",
    next: "choose a file path",
  },
  EEXIST: { code: "FS_EXISTS", what: "it already exists", next: "choose a new path or remove it first" },
  ENOENT: { code: "FS_NOT_FOUND", what: "it does not exist", next: "check the path" },
  EMFILE: {
    code: "FS_TOO_MANY_FILES",
    what: "too many open files",
    next: "raise the open-file limit (ulimit -n) and run again",
  },
};

/** A Node.js filesystem error (errno code and path) as a BringupError naming the path; undefined for anything else. */
export function fileSystemError(error: unknown): BringupError | undefined {
  if (!(error instanceof Error)) return undefined;
  const { code, path } = error as NodeJS.ErrnoException;
  const advice = code === undefined ? undefined : ERRNO_ADVICE[code];
  if (advice === undefined || path === undefined) return undefined;
  return new BringupError(advice.code, `cannot use ${path}: ${advice.what}; ${advice.next}.`, {
    subject: path,
    cause: error,
  });
}

/** Runs `work`, turning a filesystem error into a BringupError naming the path. */
export async function namingPath<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw fileSystemError(error) ?? error;
  }
}

/**
 * Checks, before long work starts, that a directory can be written: makes it (and its parents)
 * if needed and writes and removes a probe file. Throws a BringupError naming the path otherwise.
 */
export async function checkWritableDirectory(dir: string): Promise<void> {
  const found = await stat(dir).catch(() => undefined);
  if (found !== undefined && !found.isDirectory()) {
    throw new BringupError(
      "FS_NOT_DIRECTORY",
      `cannot use ${dir}: it is a file, not a directory; choose another path, or move that file away.`,
      { subject: dir },
    );
  }
  await namingPath(async () => {
    await mkdir(dir, { recursive: true });
    const probe = join(dir, `.bringup-probe-${process.pid}-${randomBytes(4).toString("hex")}`);
    await writeFile(probe, "");
    await rm(probe, { force: true });
  });
}

/** Checks, before long work starts, that a new output (file or directory) can be made at `path`. */
export async function checkNewOutput(path: string): Promise<void> {
  const found = await stat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw fileSystemError(error) ?? error;
  });
  if (found !== undefined) {
    throw new BringupError(
      "OUTPUT_EXISTS",
      `${path} already exists; choose a new output path or remove it first.`,
      {
        subject: path,
      },
    );
  }
  await checkWritableDirectory(dirname(path));
}
