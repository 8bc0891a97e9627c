import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { unregisteredModelCode } from "./model-code-check.js";
import { PORT_MODELS } from "./port-models.js";

const REPO = join(import.meta.dirname, "../..");
const root = await mkdtemp(join(tmpdir(), "bringup-model-code-"));
afterAll(() => rm(root, { recursive: true, force: true }));

describe("unregistered model code", () => {
  it("passes the repository: every port's model.ts is in the registry", async () => {
    expect(await unregisteredModelCode(REPO, PORT_MODELS)).toEqual([]);
  });

  it("names a port whose model.ts no registry entry imports", async () => {
    await cp(join(REPO, "ports", "glm-5.3-flash"), join(root, "ports", "novel-port"), { recursive: true });
    await writeFile(join(root, "ports", "novel-port", "model.ts"), "export const portModel = {};\n");
    const found = await unregisteredModelCode(root, PORT_MODELS);
    expect(found).toEqual([
      expect.objectContaining({
        file: "ports/novel-port/model.ts",
        expected: expect.stringMatching(/PORT_MODELS/),
      }),
    ]);
    expect(await unregisteredModelCode(root, PORT_MODELS, "novel-port")).toHaveLength(1);
  });
});
