import { copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkCatalog } from "../catalog/index.js";
import { FIXTURES_DIR, fixtureManifest, hashTree } from "./fixtures/index.js";
import { generateRecipe, RECIPE_PATHS, recipeProblems, writeRecipe } from "./generate.js";

let root: string;
let portDir: string;

/** A one-port catalog holding a fixture manifest, as `ports/<id>/`. */
async function catalogWith(fixture: string, id: string): Promise<void> {
  portDir = join(root, "ports", id);
  await mkdir(portDir, { recursive: true });
  await copyFile(join(FIXTURES_DIR, "manifests", `${fixture}.yaml`), join(portDir, "port.yaml"));
  await writeFile(join(portDir, "README.md"), `# ${id}\n\nA fixture port for the recipe tests.\n`);
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-recipe-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("generateRecipe", () => {
  it("is deterministic: the same manifest gives the same bytes", async () => {
    const first = generateRecipe(await fixtureManifest("complete-lazy"));
    const second = generateRecipe(await fixtureManifest("complete-lazy"));
    expect(second).toEqual(first);
    expect(first.map((file) => file.path)).toEqual([...RECIPE_PATHS]);
  });

  it("writes a Dockerfile FROM the pinned image that copies the port and runs install.sh", async () => {
    const [dockerfile] = generateRecipe(await fixtureManifest("complete-lazy"));
    const instructions = dockerfile?.content
      .split("\n")
      .filter((line) => line !== "" && !line.startsWith("#"));
    expect(instructions).toEqual([
      `FROM registry.example.test/fixtures/vllm-gaudi:1.24.1@sha256:${"0".repeat(63)}1`,
      "COPY ports/fixture-lazy /opt/bringup/ports/fixture-lazy",
      'RUN ["/bin/sh", "/opt/bringup/ports/fixture-lazy/recipe/install.sh"]',
    ]);
  });
});

describe("writeRecipe", () => {
  it("writes the three files, the scripts executable", async () => {
    await catalogWith("complete-lazy", "fixture-lazy");
    const written = await writeRecipe(portDir, await fixtureManifest("complete-lazy"));
    expect(written).toEqual([...RECIPE_PATHS]);
    for (const file of generateRecipe(await fixtureManifest("complete-lazy"))) {
      expect(await readFile(join(portDir, file.path), "utf8")).toBe(file.content);
      expect(((await stat(join(portDir, file.path))).mode & 0o111) !== 0).toBe(file.executable);
    }
  });

  it("refuses a manifest with missing pins and writes nothing", async () => {
    await catalogWith("partial", "fixture-partial");
    const before = await hashTree(portDir);
    await expect(writeRecipe(portDir, await fixtureManifest("partial"))).rejects.toMatchObject({
      code: "RECIPE_PINS_MISSING",
    });
    expect(await hashTree(portDir)).toBe(before);
  });
});

describe("recipe freshness in `bringup ports check`", () => {
  it("passes a port without a recipe and one whose recipe matches its manifest", async () => {
    await catalogWith("partial", "fixture-partial");
    await catalogWith("complete-lazy", "fixture-lazy");
    await writeRecipe(portDir, await fixtureManifest("complete-lazy"));
    expect(await checkCatalog(root)).toEqual([]);
  });

  it("fails when the manifest changed after the recipe was generated", async () => {
    await catalogWith("complete-lazy", "fixture-lazy");
    await writeRecipe(portDir, await fixtureManifest("complete-lazy"));
    const manifest = join(portDir, "port.yaml");
    await writeFile(
      manifest,
      (await readFile(manifest, "utf8")).replace("vllm_gaudi: 0.0.2", "vllm_gaudi: 0.0.3"),
    );
    const problems = await checkCatalog(root);
    expect(problems.map((p) => p.file)).toEqual([
      "ports/fixture-lazy/recipe/install.sh",
      "ports/fixture-lazy/tests/hpu/run_gates.sh",
    ]);
    for (const problem of problems) {
      expect(problem.message).toMatch(/^is out of date with port\.yaml \(first difference at line \d+\)$/);
      expect(problem.expected).toBe("the output of `bringup recipe fixture-lazy`");
    }
  });

  it("fails on a hand edit, a missing file, and recipe files without complete pins", async () => {
    await catalogWith("complete-lazy", "fixture-lazy");
    const manifest = await fixtureManifest("complete-lazy");
    await writeRecipe(portDir, manifest);
    await writeFile(join(portDir, "recipe/Dockerfile"), "FROM somewhere-else\n");
    await rm(join(portDir, "tests/hpu/run_gates.sh"));
    expect(
      (await recipeProblems(portDir, "ports/fixture-lazy", manifest)).map((p) => [p.file, p.message]),
    ).toEqual([
      ["ports/fixture-lazy/recipe/Dockerfile", "is out of date with port.yaml (first difference at line 1)"],
      ["ports/fixture-lazy/tests/hpu/run_gates.sh", "is missing; the recipe's files are generated together"],
    ]);

    const partial = await fixtureManifest("partial");
    const problems = await recipeProblems(portDir, "ports/fixture-lazy", partial);
    expect(problems.map((p) => p.file)).toEqual([
      "ports/fixture-lazy/recipe/Dockerfile",
      "ports/fixture-lazy/recipe/install.sh",
    ]);
    expect(problems[0]?.message).toContain("software.pins.gaudi_build");
  });
});
