import { constants } from "node:fs";
import { access } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { deviceBlocksCheck } from "./device-blocks-check.js";
import { defaultDevicePython } from "./device-check.js";

const ROOT = join(import.meta.dirname, "../..");
const venv = await access(defaultDevicePython(ROOT), constants.X_OK).then(
  () => true,
  () => false,
);

describe("the block-by-block device check", () => {
  it("refuses a port that declares no block-by-block check, naming it", async () => {
    await expect(
      deviceBlocksCheck({ root: ROOT, portId: "mimo-v2.6-flash", record: false }),
    ).rejects.toMatchObject({
      code: "PORT_NO_DEVICE_CHECK",
    });
  });

  // Runs where the plugin's venv is (device-plugin/scripts/setup-venv.sh makes it); ci.sh covers it too.
  it.skipIf(!venv)(
    "passes glm-5.3-flash's blocks, every one within the test's tolerance",
    async () => {
      const result = await deviceBlocksCheck({ root: ROOT, portId: "glm-5.3-flash", record: false });
      expect(result.status, result.summary).toBe("passed");
      expect(result.summary).toMatch(
        /^18 blocks .* over 100 prompt tokens and 4 decode steps \(chunked and recurrent\): largest/,
      );
    },
    300_000,
  );
});
