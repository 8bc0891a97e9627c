import { join, resolve } from "node:path";
import { type Command, InvalidArgumentError, Option } from "commander";
import { BringupError } from "../../common/errors.js";
import { checkNewOutput } from "../../common/fs-errors.js";
import {
  findTinySize,
  generateTinyModel,
  readCorpus,
  TINY_DTYPES,
  TINY_SIZES,
  type TinyDtype,
  tinyParameterCount,
  writeTinyModel,
} from "../../engine/index.js";
import { projectRoot } from "../root.js";

function integer(value: string): number {
  if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError("expected an integer.");
  return Number(value);
}

function sizeTable(): string {
  const rows = [
    ["name", "parameters", "layers", "hidden", "heads/kv", "head", "ffn", "experts", "vocab", "purpose"],
  ];
  for (const s of TINY_SIZES) {
    rows.push([
      s.name,
      `~${tinyParameterCount(s, s.bpeVocab + 3).toLocaleString("en-US")}`,
      String(s.numLayers),
      String(s.hiddenSize),
      `${s.numHeads}/${s.numKvHeads}`,
      String(s.headDim),
      String(s.experts?.intermediateSize ?? s.intermediateSize),
      s.experts ? `${s.experts.numExperts} top-${s.experts.topK}` : "-",
      `<=${s.bpeVocab + 3}`,
      s.purpose,
    ]);
  }
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((r) => (r[c] as string).length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((cell, c) => cell.padEnd(widths[c] as number))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/** Adds `make-tiny` to the `weights` group, creating the group only if no other module has. */
export function registerMakeTiny(program: Command): void {
  const weights =
    program.commands.find((c) => c.name() === "weights") ??
    program.command("weights").description("weights: inspect, convert, verify, and make tiny models");
  weights
    .command("make-tiny")
    .description(
      "write a tiny model directory: config.json, a byte-level BPE tokenizer trained on corpus/, seeded random safetensors",
    )
    .argument("[name]", "a size from the table (--list)")
    .option("--out <dir>", "the model directory to create (must not exist)")
    .option("--list", "print the size table and exit")
    .option("--seed <n>", "weight seed", integer, 0)
    .addOption(
      new Option("--dtype <dtype>", "storage dtype of the layer matrices")
        .choices([...TINY_DTYPES])
        .default("f32"),
    )
    .action(
      async (
        name: string | undefined,
        options: { out?: string; list?: boolean; seed: number; dtype: TinyDtype },
        command: Command,
      ) => {
        if (options.list) {
          process.stdout.write(`${sizeTable()}\n`);
          return;
        }
        if (name === undefined)
          throw new BringupError(
            "TINY_SIZE_MISSING",
            `name a size: ${TINY_SIZES.map((s) => s.name).join(", ")} (see --list).`,
          );
        const size = findTinySize(name);
        if (size === undefined) {
          throw new BringupError(
            "TINY_SIZE_UNKNOWN",
            `no tiny size named "${name}"; choose one of ${TINY_SIZES.map((s) => s.name).join(", ")}.`,
            {
              subject: name,
            },
          );
        }
        if (options.out === undefined)
          throw new BringupError("OUT_MISSING", "give the directory to write with --out DIR.");
        const out = resolve(options.out);
        await checkNewOutput(out);
        const started = performance.now();
        const corpus = await readCorpus(join(projectRoot(command), "corpus"));
        const files = generateTinyModel(size, corpus, { seed: options.seed, dtype: options.dtype });
        await writeTinyModel(out, files);
        const seconds = ((performance.now() - started) / 1000).toFixed(1);
        const vocab = files.config.vocab_size as number;
        process.stdout.write(
          `wrote ${size.name} (${files.numParameters.toLocaleString("en-US")} parameters, vocab ${vocab}, ${options.dtype}, seed ${options.seed}) to ${out} in ${seconds} s\n`,
        );
      },
    );
}
