import { join } from "node:path";
import type { Command } from "commander";
import { inspectCatalog, PORTS_DIR } from "../../catalog/index.js";
import { exists } from "../../common/atomic-write.js";
import {
  RECIPE_PATHS,
  recipeProblems,
  resolveRecipe,
  serveCommandLine,
  writeRecipe,
} from "../../recipes/index.js";
import { formatProblem } from "../../records/index.js";
import { projectRoot } from "../root.js";

export function registerRecipe(program: Command): void {
  program
    .command("recipe")
    .description(
      "write a port's vllm-gaudi recipe (recipe/Dockerfile, recipe/install.sh, tests/hpu/run_gates.sh) from the pins in its manifest; refuses, naming each missing pin, until the port states them",
    )
    .argument("<port>", "the port id")
    .option(
      "--check",
      "write nothing; exit 1 unless the checked-in recipe is exactly what the manifest gives",
    )
    .action(async (id: string, options: { check?: boolean }, command: Command) => {
      const { ports, diagnostics } = await inspectCatalog(projectRoot(command), id);
      const port = ports[0];
      const label = `${PORTS_DIR}/${id}`;
      if (port?.manifest === undefined) {
        process.stdout.write(`${diagnostics.map(formatProblem).join("\n")}\n`);
        process.stderr.write(
          `${label}/port.yaml must pass \`bringup ports check ${id}\` before it can have a recipe\n`,
        );
        process.exitCode = 1;
        return;
      }
      const manifest = port.manifest;
      if (options.check) {
        const problems = await recipeProblems(port.dir, label, manifest);
        if (problems.length === 0 && !(await hasRecipe(port.dir))) {
          process.stderr.write(`${label} has no recipe; run \`bringup recipe ${id}\` to write one\n`);
          process.exitCode = 1;
        } else if (problems.length > 0) {
          process.stdout.write(`${problems.map(formatProblem).join("\n")}\n`);
          process.exitCode = 1;
        } else {
          process.stdout.write(`ok: ${label}'s recipe matches its manifest\n`);
        }
        return;
      }
      const written = await writeRecipe(port.dir, manifest);
      for (const path of written) process.stdout.write(`wrote ${label}/${path}\n`);
      process.stdout.write(`serves as: ${serveCommandLine(resolveRecipe(manifest))}\n`);
    });
}

/** Whether any recipe file is there; recipeProblems is silent both when they match and when there are none. */
async function hasRecipe(dir: string): Promise<boolean> {
  for (const path of RECIPE_PATHS) {
    if (await exists(join(dir, path))) return true;
  }
  return false;
}
