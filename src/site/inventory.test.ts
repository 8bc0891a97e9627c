import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PORT_LAYOUT } from "../catalog/index.js";
import { shipped } from "./availability.js";
import { inventoryPort } from "./inventory.js";
import { manifest, port } from "./tests/fixture.js";

describe("inventoryPort", () => {
  let root: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "bringup-inventory-"));
    const dir = join(root, "ports", "a-port");
    await mkdir(join(dir, "results"), { recursive: true });
    await mkdir(join(dir, "tests", "cpu", "nested"), { recursive: true });
    await writeFile(join(dir, "port.yaml"), "id: a-port\n");
    await writeFile(join(dir, "README.md"), "# A\n");
    await writeFile(join(dir, "results", "reported.jsonl"), "");
    await writeFile(join(dir, "tests", "cpu", "model.test.ts"), "");
    await writeFile(join(dir, "tests", "cpu", "nested", "more.test.ts"), "");
    // A directory where the layout expects a file does not count as that file.
    await mkdir(join(dir, "recipe", "Dockerfile"), { recursive: true });
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("finds each layout entry's files and reports the ones a port has not gained", async () => {
    const files = await inventoryPort(root, port(root, manifest("a-port"), "# A\n"));
    expect(files.path).toBe("ports/a-port/");
    expect(files.entries.map((found) => found.entry.path)).toEqual(PORT_LAYOUT.map((entry) => entry.path));
    const byPath = new Map(files.entries.map((found) => [found.entry.path, found.files]));
    expect(byPath.get("port.yaml")).toEqual(["port.yaml"]);
    expect(byPath.get("results/")).toEqual(["results/reported.jsonl"]);
    expect(byPath.get("tests/cpu/")).toEqual(["tests/cpu/model.test.ts", "tests/cpu/nested/more.test.ts"]);
    expect(byPath.get("recipe/Dockerfile")).toEqual([]);

    const { has, lacks } = shipped(files, 2);
    expect(has.join(" ")).toContain("`results/reported.jsonl`; 2 records");
    expect(lacks).toContain("`recipe/Dockerfile`");
    expect(lacks).toContain("`tests/hpu/run_gates.sh`");
  });
});
