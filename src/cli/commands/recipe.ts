import type { Command } from "commander";
import { inspectCatalog, PORTS_DIR } from "../../catalog/index.js";
import {
  blocksCheckCommand,
  NOT_SERVED_EXIT,
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
      "write a port's vllm-gaudi recipe (recipe/Dockerfile, recipe/install.sh, tests/hpu/run_gates.sh) from its manifest and the platform pins in src/recipes/platform.ts; a port needs engine model code to have one",
    )
    .argument("<port>", "the port id")
    .option(
      "--check",
      "write nothing; exit 1 unless the checked-in recipe is exactly what the manifest and pins give",
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
        if (problems.length > 0) {
          process.stdout.write(`${problems.map(formatProblem).join("\n")}\n`);
          process.exitCode = 1;
        } else {
          process.stdout.write(
            manifest.reference === undefined
              ? `ok: ${label} has no engine model code and no recipe\n`
              : `ok: ${label}'s recipe matches its manifest and the platform pins\n`,
          );
        }
        return;
      }
      const written = await writeRecipe(port.dir, manifest);
      for (const path of written) process.stdout.write(`wrote ${label}/${path}\n`);
      const recipe = resolveRecipe(manifest);
      process.stdout.write(
        recipe.notServed === undefined
          ? `serves as: ${serveCommandLine(recipe)}\n`
          : `not served by vLLM here: ${recipe.notServed.why}\nrun_gates.sh checks the pins, then exits ${NOT_SERVED_EXIT}; \`${blocksCheckCommand(recipe.port)}\` checks its blocks on the CPU\n`,
      );
    });
}
