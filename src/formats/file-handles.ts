import { closeSync, openSync } from "node:fs";
import type { ErrorCode } from "../common/error-catalogue.js";
import { BringupError } from "../common/errors.js";

/**
 * Open file descriptors shared by this thread's safetensors readers, at most `limit` at once: a
 * checkpoint of hundreds of shards, read by several threads at a time, stays far below
 * `ulimit -n`. A descriptor in use is never closed; idle ones close, least recently used first.
 */
export class FileHandles {
  /** In order of last use, oldest first. */
  readonly #open = new Map<string, { fd: number; users: number }>();

  constructor(readonly limit: number) {}

  /** A descriptor for `path`, open until the matching `release`. */
  acquire(path: string): number {
    const entry = this.#open.get(path) ?? { fd: openForReading(path), users: 0 };
    this.#open.delete(path);
    this.#open.set(path, entry);
    entry.users += 1;
    this.#trim();
    return entry.fd;
  }

  release(path: string): void {
    const entry = this.#open.get(path);
    if (entry !== undefined) entry.users -= 1;
    this.#trim();
  }

  /** Closes `path`'s descriptor now if no one uses it (else when the last user releases it and space is needed). */
  close(path: string): void {
    const entry = this.#open.get(path);
    if (entry === undefined || entry.users > 0) return;
    this.#open.delete(path);
    closeSync(entry.fd);
  }

  /** How many descriptors are open. */
  get size(): number {
    return this.#open.size;
  }

  #trim(): void {
    for (const [path, entry] of this.#open) {
      if (this.#open.size <= this.limit) return;
      if (entry.users > 0) continue;
      this.#open.delete(path);
      closeSync(entry.fd);
    }
  }
}

/** At most this many source files open per thread: a converter's three threads keep about 50. */
export const READ_HANDLES = new FileHandles(16);

function openForReading(path: string): number {
  try {
    return openSync(path, "r");
  } catch (error) {
    throw openError(error, path);
  }
}

/** A failure to open `path` for reading, as a BringupError saying what to do. */
export function openError(error: unknown, path: string): BringupError {
  const code = (error as NodeJS.ErrnoException).code;
  const [ours, advice]: [ErrorCode, string] =
    code === "ENOENT" || code === "ENOTDIR"
      ? ["FILE_NOT_FOUND", "check the path"]
      : code === "EMFILE" || code === "ENFILE"
        ? ["TOO_MANY_OPEN_FILES", "raise `ulimit -n` or close other programs"]
        : code === "EACCES" || code === "EPERM"
          ? ["FILE_NOT_READABLE", "give this user read permission"]
          : ["FILE_UNREADABLE", "check the file and the disk"];
  return new BringupError(ours, `${path}: cannot open (${(error as Error).message}); ${advice}.`, {
    subject: path,
    cause: error,
  });
}
