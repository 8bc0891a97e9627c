/** Characters gathered before a write: few system calls, and little held. */
const BATCH = 1 << 16;

/**
 * Writes text pieces to a stream (stdout) in batches, waiting while it asks to (a pipe read
 * slowly), so a report of any length is held a batch at a time rather than as one string or a
 * queue of unwritten ones. Stops early when the stream closes or fails (a reader that went away).
 */
export async function writePieces(
  pieces: Iterable<string>,
  out: NodeJS.WritableStream = process.stdout,
): Promise<void> {
  let batch = "";
  for (const piece of pieces) {
    batch += piece;
    if (batch.length >= BATCH) {
      if (!(await write(out, batch))) return;
      batch = "";
    }
  }
  if (batch !== "") await write(out, batch);
}

/** Writes one batch; whether the stream takes more. */
function write(out: NodeJS.WritableStream, text: string): Promise<boolean> | boolean {
  if (out.write(text)) return true;
  return new Promise((resolve) => {
    const done = (more: boolean) => () => {
      out.off("drain", drain);
      out.off("close", stop);
      out.off("error", stop);
      resolve(more);
    };
    const drain = done(true);
    const stop = done(false);
    out.once("drain", drain);
    out.once("close", stop);
    out.once("error", stop);
  });
}
