import { mkdtemp, open, readdir, rm, statfs } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { convertCheckpoint } from "./convert.js";
import { encodeSafetensorsHeader } from "./safetensors-header.js";

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-preflight-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("the conversion's preflight", () => {
  it("refuses an output larger than the free space before writing anything", async () => {
    // A sparse source whose one tensor is 1 GiB more than the disk has free: reading its header
    // costs nothing, copying it would fill the disk.
    const { bavail, bsize } = await statfs(root);
    const elements = Math.ceil((bavail * bsize + 2 ** 30) / 2);
    const { header } = encodeSafetensorsHeader([{ name: "w", dtype: "BF16", shape: [elements] }]);
    const file = join(root, "huge.safetensors");
    const handle = await open(file, "w");
    const prefix = new Uint8Array(8);
    new DataView(prefix.buffer).setBigUint64(0, BigInt(header.length), true);
    await handle.write(prefix, 0, 8, 0);
    await handle.write(header, 0, header.length, 8);
    await handle.truncate(8 + header.length + elements * 2);
    await handle.close();
    await expect(
      convertCheckpoint(file, join(root, "out"), { to: "bf16", workers: 0 }),
    ).rejects.toMatchObject({
      code: "OUTPUT_NO_SPACE",
      message: expect.stringMatching(/out: the output needs [0-9.]+ GiB .* free; free some space/),
    });
    expect(await readdir(root)).toEqual(["huge.safetensors"]);
  });
});
