import { mkdtemp, open, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_INDEX_BYTES, readBoundedText } from "./bounded-file.js";
import { INDEX_FILE, openCheckpoint, writeCheckpoint } from "./checkpoint.js";
import { openError } from "./file-handles.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "bringup-bounded-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("files beside the weights", () => {
  it("reads a small file, and refuses one past its bound before reading it", async () => {
    await writeFile(join(dir, "small.json"), "{}");
    expect(await readBoundedText(join(dir, "small.json"), 2)).toBe("{}");
    await expect(readBoundedText(join(dir, "small.json"), 1)).rejects.toMatchObject({
      code: "FILE_TOO_LARGE",
    });
  });

  it("refuses an index past 64 MiB as too large, not as a bad index", async () => {
    const ck = join(dir, "ck");
    await writeCheckpoint(ck, [{ name: "w", dtype: "U8", shape: [1], data: new Uint8Array(1) }]);
    const index = await open(join(ck, INDEX_FILE), "w");
    await index.truncate(MAX_INDEX_BYTES + 1); // sparse: no disk used
    await index.close();
    await expect(openCheckpoint(ck)).rejects.toMatchObject({
      code: "FILE_TOO_LARGE",
      message: expect.stringMatching(/model\.safetensors\.index\.json: 67108865 bytes, more than/),
    });
  });

  it("says to raise ulimit -n when a file cannot be opened for want of descriptors", async () => {
    for (const code of ["EMFILE", "ENFILE"]) {
      const error = openError(
        Object.assign(new Error(`${code}: too many open files`), { code }),
        "/x/config.json",
      );
      expect(error).toMatchObject({
        code: "TOO_MANY_OPEN_FILES",
        message: expect.stringMatching(/ulimit -n/),
      });
    }
    await expect(readBoundedText(join(dir, "missing.json"), 10)).rejects.toMatchObject({
      code: "FILE_NOT_FOUND",
    });
  });
});
