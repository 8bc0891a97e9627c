import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FIXTURES_DIR } from "../../recipes/fixtures/index.js";
import { runInProcess } from "../tests/run-in-process.js";
import { registerPorts } from "./ports.js";
import { registerRecipe } from "./recipe.js";

/** Runs commands in process, capturing what they print, the exit code they set, and what they threw. */
function run(args: string[]) {
  return runInProcess([registerPorts, registerRecipe], args, { captureThrown: true });
}

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-cli-recipe-"));
  for (const [fixture, id] of [
    ["complete-lazy", "fixture-lazy"],
    ["no-model-code", "fixture-no-model"],
  ] as const) {
    const dir = join(root, "ports", id);
    await mkdir(dir, { recursive: true });
    await copyFile(join(FIXTURES_DIR, "manifests", `${fixture}.yaml`), join(dir, "port.yaml"));
    await writeFile(join(dir, "README.md"), `# ${id}\n\nA fixture port.\n`);
  }
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("bringup recipe", () => {
  it("writes the recipe, prints the serve command, and then ports check and --check pass", async () => {
    const result = await run(["--root", root, "recipe", "fixture-lazy"]);
    expect(result.thrown).toBeUndefined();
    expect(result.stdout).toBe(
      [
        "wrote ports/fixture-lazy/recipe/Dockerfile",
        "wrote ports/fixture-lazy/recipe/install.sh",
        "wrote ports/fixture-lazy/tests/hpu/run_gates.sh",
        'serves as: PT_HPU_LAZY_MODE=1 PT_HPU_ENABLE_LAZY_COLLECTIVES=true VLLM_SKIP_WARMUP=true python3.12 -m vllm.entrypoints.openai.api_server --model "$MODEL" --served-model-name fixture-lazy --host 127.0.0.1 --port 8000 --tensor-parallel-size 8 --max-model-len 262144',
        "",
      ].join("\n"),
    );
    expect(await run(["--root", root, "recipe", "fixture-lazy", "--check"])).toMatchObject({
      exitCode: undefined,
    });
    expect(await run(["--root", root, "ports", "check"])).toMatchObject({ exitCode: undefined });
  });

  it("says a port vLLM does not serve is not served, and what checks its blocks instead", async () => {
    const dir = join(root, "ports", "fixture-blocks");
    await mkdir(dir, { recursive: true });
    await copyFile(join(FIXTURES_DIR, "manifests", "blocks-lazy.yaml"), join(dir, "port.yaml"));
    await writeFile(join(dir, "README.md"), "# fixture-blocks\n\nA fixture port.\n");
    const result = await run(["--root", root, "recipe", "fixture-blocks"]);
    expect(result.thrown).toBeUndefined();
    expect(result.stdout).toContain(
      [
        "wrote ports/fixture-blocks/tests/hpu/run_gates.sh",
        "not served by vLLM here: The fixture's recurrent state would need vLLM's Mamba-style cache, which vllm-gaudi's \"HPU\" backend lacks.",
        "run_gates.sh checks the pins, then exits 3; `bringup device check fixture-blocks` checks its blocks on the CPU",
        "",
      ].join("\n"),
    );
    expect(result.stdout).not.toContain("serves as:");
  });

  it("makes ports check and --check fail once the manifest moves on", async () => {
    await run(["--root", root, "recipe", "fixture-lazy"]);
    const manifest = join(root, "ports/fixture-lazy/port.yaml");
    await writeFile(manifest, (await readFile(manifest, "utf8")).replace("cards: 8", "cards: 4"));
    const check = await run(["--root", root, "ports", "check"]);
    expect(check.exitCode).toBe(1);
    expect(check.stdout).toContain(
      "ports/fixture-lazy/tests/hpu/run_gates.sh: is out of date with port.yaml and src/recipes/platform.ts",
    );
    const recipeCheck = await run(["--root", root, "recipe", "fixture-lazy", "--check"]);
    expect(recipeCheck.exitCode).toBe(1);
    expect(recipeCheck.stdout).toContain("(expected the output of `bringup recipe fixture-lazy`)");
  });

  it("refuses a port without engine model code, and --check reports a missing recipe", async () => {
    const result = await run(["--root", root, "recipe", "fixture-no-model"]);
    expect(result.thrown).toMatchObject({ code: "RECIPE_NO_MODEL_CODE" });
    expect(await run(["--root", root, "recipe", "fixture-no-model", "--check"])).toMatchObject({
      exitCode: undefined,
      stdout: "ok: ports/fixture-no-model has no engine model code and no recipe\n",
    });
    const check = await run(["--root", root, "recipe", "fixture-lazy", "--check"]);
    expect(check.exitCode).toBe(1);
    expect(check.stdout).toContain(
      "ports/fixture-lazy/recipe/Dockerfile: is missing; a port with engine model code has a recipe",
    );
  });
});
