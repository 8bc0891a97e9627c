import { open } from "node:fs/promises";
import { BringupError } from "../common/errors.js";
import { openError } from "./file-handles.js";

/**
 * A JSON file beside the weights (an index, a config) read only when at most `maxBytes`: these are
 * kilobytes to a few megabytes, and one of gigabytes would only exhaust memory before failing.
 */
export async function readBoundedText(path: string, maxBytes: number): Promise<string> {
  return new TextDecoder().decode(await readBoundedBytes(path, maxBytes));
}

/** readBoundedText's bytes, undecoded. */
export async function readBoundedBytes(path: string, maxBytes: number): Promise<Uint8Array> {
  const handle = await open(path, "r").catch((error: unknown) => {
    throw openError(error, path);
  });
  try {
    const { size } = await handle.stat();
    if (size > maxBytes) {
      throw new BringupError(
        "FILE_TOO_LARGE",
        `${path}: ${size} bytes, more than the ${maxBytes} such a file can be; it is corrupt or not what its name says, so replace it.`,
        { subject: path },
      );
    }
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** The largest model.safetensors.index.json read: the largest public ones are about 20 MB. */
export const MAX_INDEX_BYTES = 64 * 2 ** 20;
/** The largest config.json read: public ones are a few kilobytes. */
export const MAX_CONFIG_BYTES = 16 * 2 ** 20;
