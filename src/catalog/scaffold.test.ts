import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkCatalog } from "./check.js";
import { loadCatalog } from "./load.js";
import { scaffoldPort } from "./scaffold.js";

describe("scaffoldPort", () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "bringup-scaffold-"));
    await mkdir(join(root, "ports"));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("creates a port that passes the linter and loads with the given facts", async () => {
    const dir = await scaffoldPort(root, {
      id: "nova-2",
      name: "Nova-2",
      totalParamsB: 120,
      activeParamsB: 5,
      features: ["attention.sinks", "kv.window-sized"],
      weightFormats: ["mxfp4"],
    });
    expect(dir).toBe(join(root, "ports/nova-2"));
    expect((await readdir(dir)).sort()).toEqual(["README.md", "port.yaml"]);
    expect(await checkCatalog(root)).toEqual([]);
    const [port] = (await loadCatalog(root)).ports;
    expect(port?.manifest.model).toMatchObject({ name: "Nova-2", architecture: "moe", total_params_b: 120 });
    expect(port?.manifest.status.state).toBe("in-progress");
    expect(port?.manifest.hard.summary).toContain("sink logit");
  });

  it("refuses a bad id, an existing directory and an id another manifest declares", async () => {
    const options = { totalParamsB: 7, features: ["attention.sinks" as const] };
    await expect(scaffoldPort(root, { id: "Bad Id", ...options })).rejects.toMatchObject({
      code: "PORT_ID_INVALID",
    });
    await scaffoldPort(root, { id: "taken", ...options });
    await expect(scaffoldPort(root, { id: "taken", ...options })).rejects.toMatchObject({
      code: "PORT_EXISTS",
    });
    await mkdir(join(root, "ports/elsewhere"));
    await writeFile(join(root, "ports/elsewhere/port.yaml"), "id: claimed\n");
    await expect(scaffoldPort(root, { id: "claimed", ...options })).rejects.toMatchObject({
      code: "PORT_EXISTS",
    });
  });

  it("writes nothing when the options make an invalid manifest", async () => {
    await expect(
      scaffoldPort(root, { id: "tiny", totalParamsB: -1, features: ["attention.sinks"] }),
    ).rejects.toMatchObject({ code: "SCAFFOLD_INVALID" });
    expect(await readdir(join(root, "ports"))).toEqual([]);
  });

  it("needs a ports/ directory", async () => {
    await rm(join(root, "ports"), { recursive: true });
    await expect(
      scaffoldPort(root, { id: "tiny", totalParamsB: 1, features: ["attention.sinks"] }),
    ).rejects.toMatchObject({ code: "CATALOG_NOT_FOUND" });
  });
});
