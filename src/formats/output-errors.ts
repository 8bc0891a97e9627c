import { BringupError, isBringupError } from "../common/errors.js";

/**
 * A file system error met while writing output, as a BringupError saying what to do: a full disk or
 * a read-only destination is the user's to fix, not a bug to show a stack trace for. Other errors
 * come back unchanged.
 */
export function outputError(error: unknown, path: string): unknown {
  if (isBringupError(error)) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const reason = (error as Error | undefined)?.message ?? String(error);
  if (code === "ENOSPC" || code === "EDQUOT" || code === "EFBIG") {
    return new BringupError(
      "OUTPUT_DISK_FULL",
      `${path}: the disk is full or the file too large (${reason}); free space or write elsewhere. Nothing was kept.`,
      { subject: path, cause: error },
    );
  }
  if (code === "EACCES" || code === "EPERM" || code === "EROFS") {
    return new BringupError(
      "OUTPUT_NOT_WRITABLE",
      `${path}: cannot write there (${reason}); choose a destination this user can write to.`,
      { subject: path, cause: error },
    );
  }
  if (code === "EMFILE" || code === "ENFILE") {
    return new BringupError(
      "TOO_MANY_OPEN_FILES",
      `${path}: too many open files (${reason}); raise \`ulimit -n\` or close other programs.`,
      { subject: path, cause: error },
    );
  }
  return error;
}
