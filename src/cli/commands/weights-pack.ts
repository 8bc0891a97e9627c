import { resolve } from "node:path";
import type { Command } from "commander";
import { BringupError } from "../../common/errors.js";
import { checkNewOutput } from "../../common/fs-errors.js";
import { packCheckpoint } from "../../formats/index.js";
import { formatBytes } from "./weights.js";

function ranks(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1024) {
    throw new BringupError("BAD_ARGUMENT", `--ranks ${value}: give a whole number from 1 to 1024.`, {
      subject: "--ranks",
    });
  }
  return n;
}

/** Adds `pack` to the `weights` group: a checkpoint in the packed load format the engine reads directly. */
export function registerWeightsPack(program: Command): void {
  const weights = program.commands.find((c) => c.name() === "weights") ?? program.command("weights");
  weights
    .command("pack")
    .description(
      "write a checkpoint as the engine holds it in memory: one file per tensor-parallel rank, aligned, with a manifest (packed.json) the loader reads directly",
    )
    .argument("<src>", "checkpoint directory (sharded or not) or .safetensors file")
    .argument("<out>", "output directory; must not exist")
    .option(
      "--ranks <n>",
      "tensor-parallel ranks: tensors of 2+ dimensions split along their first dimension, the rest replicated",
      ranks,
      1,
    )
    .option("--json", "print the report as JSON")
    .action(async (src: string, out: string, flags: { ranks: number; json?: boolean }) => {
      await checkNewOutput(resolve(out));
      const report = await packCheckpoint(src, out, flags.ranks);
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
        return;
      }
      const total = report.rankBytes.reduce((a, b) => a + b, 0);
      process.stdout.write(
        `${report.tensors} tensors packed for ${report.ranks} rank${report.ranks === 1 ? "" : "s"} in ${report.output} (${formatBytes(total)}); check it with \`bringup weights verify ${src} ${out}\`\n`,
      );
    });
}
