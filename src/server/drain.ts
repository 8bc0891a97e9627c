/** Most bytes of a refused request's body read and discarded to keep its connection usable. */
export const MAX_DRAIN_BYTES = 64 * 1024 * 1024;
/** Longest time spent discarding a refused request's body. */
export const MAX_DRAIN_MS = 10_000;

/**
 * Reads and discards the rest of a request's body, so that a client still sending it (Python's
 * http.client sends it all before it reads any answer) gets the response, and the connection
 * stays usable. Resolves true once the body ended; false when it is over `most` bytes, slower
 * than `ms` or broken: then the connection must be closed after the answer.
 */
export async function discardBody(
  body: ReadableStream<Uint8Array>,
  most = MAX_DRAIN_BYTES,
  ms = MAX_DRAIN_MS,
): Promise<boolean> {
  if (body.locked) return false;
  const reader = body.getReader();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), ms);
  });
  let bytes = 0;
  try {
    for (;;) {
      const read = await Promise.race([reader.read(), late]);
      if (read === "late") return false;
      if (read.done) return true;
      bytes += read.value.byteLength;
      if (bytes > most) return false;
    }
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
}
