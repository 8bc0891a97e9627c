import { copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkCatalog } from "../catalog/index.js";
import { FIXTURES_DIR, fixtureManifest, hashTree } from "./fixtures/index.js";
import { generateRecipe, RECIPE_PATHS, recipeProblems, writeRecipe } from "./generate.js";
import { PLATFORM } from "./platform.js";

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

  it("writes a Dockerfile FROM the stock image that builds vLLM and vllm-gaudi, copies the wheel and the port, and runs install.sh", async () => {
    const [dockerfile] = generateRecipe(await fixtureManifest("complete-lazy"));
    const instructions = dockerfile?.content
      .split("\n")
      .filter((line) => /^[A-Z]+ /.test(line))
      .map((line) => line.split(" ").slice(0, 2).join(" "));
    expect(instructions).toEqual([
      "FROM vault.habana.ai/gaudi-docker/1.24.1/ubuntu24.04/habanalabs/pytorch-installer-2.11.0:latest",
      "RUN git",
      "COPY .cache/recipe-wheels/",
      "COPY ports/fixture-lazy",
      'RUN ["/bin/sh",',
    ]);
    expect(dockerfile?.content).toContain("NOT YET RUN ON A DEVICE");
    expect(dockerfile?.content).toContain("--branch v0.26.0 https://github.com/vllm-project/vllm.git");
    expect(dockerfile?.content).toContain("VLLM_TARGET_DEVICE=empty pip install --no-build-isolation .");
  });

  it("says a device run once one is recorded", async () => {
    const platform = { ...PLATFORM, deviceRuns: { "fixture-lazy": ["fixture-lazy/device-run"] } };
    for (const file of generateRecipe(await fixtureManifest("complete-lazy"), platform)) {
      expect(file.content, file.path).not.toContain("NOT YET RUN ON A DEVICE");
      expect(file.content, file.path).toContain("Run on a device: record fixture-lazy/device-run.");
    }
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

  it("refuses a port without engine model code and writes nothing", async () => {
    await catalogWith("no-model-code", "fixture-no-model");
    const before = await hashTree(portDir);
    await expect(writeRecipe(portDir, await fixtureManifest("no-model-code"))).rejects.toMatchObject({
      code: "RECIPE_NO_MODEL_CODE",
    });
    expect(await hashTree(portDir)).toBe(before);
  });
});

describe("recipe freshness in `bringup ports check`", () => {
  it("passes a port without model code and no recipe, and one whose recipe matches", async () => {
    const lazy = await fixtureManifest("complete-lazy");
    const none = await fixtureManifest("no-model-code");
    await catalogWith("no-model-code", "fixture-no-model");
    expect(await recipeProblems(portDir, "ports/fixture-no-model", none)).toEqual([]);
    await catalogWith("complete-lazy", "fixture-lazy");
    await writeRecipe(portDir, lazy);
    expect(await recipeProblems(portDir, "ports/fixture-lazy", lazy)).toEqual([]);
  });

  it("fails when the manifest or the platform pins changed after the recipe was generated", async () => {
    await catalogWith("complete-lazy", "fixture-lazy");
    await writeRecipe(portDir, await fixtureManifest("complete-lazy"));
    const manifest = join(portDir, "port.yaml");
    await writeFile(manifest, (await readFile(manifest, "utf8")).replace("cards: 8", "cards: 4"));
    const problems = await checkCatalog(root);
    expect(problems.map((p) => p.file)).toEqual(["ports/fixture-lazy/tests/hpu/run_gates.sh"]);
    expect(problems[0]?.message).toMatch(
      /^is out of date with port\.yaml and src\/recipes\/platform\.ts \(first difference at line \d+\)$/,
    );
    expect(problems[0]?.expected).toBe("the output of `bringup recipe fixture-lazy`");

    const moved = { ...PLATFORM, image: { ...PLATFORM.image, value: `${PLATFORM.image.value}-2` } };
    const stale = await recipeProblems(
      portDir,
      "ports/fixture-lazy",
      await fixtureManifest("complete-lazy"),
      moved,
    );
    expect(stale.map((p) => p.file)).toEqual([
      "ports/fixture-lazy/recipe/Dockerfile",
      "ports/fixture-lazy/recipe/install.sh",
      "ports/fixture-lazy/tests/hpu/run_gates.sh",
    ]);
  });

  it("fails on a hand edit, a missing file or recipe, and recipe files of a port without model code", async () => {
    await catalogWith("complete-lazy", "fixture-lazy");
    const manifest = await fixtureManifest("complete-lazy");
    expect((await recipeProblems(portDir, "ports/fixture-lazy", manifest)).map((p) => p.file)).toEqual(
      RECIPE_PATHS.map((path) => `ports/fixture-lazy/${path}`),
    );
    await writeRecipe(portDir, manifest);
    await writeFile(join(portDir, "recipe/Dockerfile"), "FROM somewhere-else\n");
    await rm(join(portDir, "tests/hpu/run_gates.sh"));
    expect(
      (await recipeProblems(portDir, "ports/fixture-lazy", manifest)).map((p) => [p.file, p.message]),
    ).toEqual([
      [
        "ports/fixture-lazy/recipe/Dockerfile",
        "is out of date with port.yaml and src/recipes/platform.ts (first difference at line 1)",
      ],
      [
        "ports/fixture-lazy/tests/hpu/run_gates.sh",
        "is missing; a port with engine model code has a recipe, generated as a whole",
      ],
    ]);

    const none = await fixtureManifest("no-model-code");
    const problems = await recipeProblems(portDir, "ports/fixture-lazy", none);
    expect(problems.map((p) => p.file)).toEqual([
      "ports/fixture-lazy/recipe/Dockerfile",
      "ports/fixture-lazy/recipe/install.sh",
    ]);
    expect(problems[0]?.message).toContain("no engine model code");
  });
});
