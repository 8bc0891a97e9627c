import { resolve } from "node:path";
import { setFlagsFromString } from "node:v8";
import cliProgress from "cli-progress";
import { type Command, Option } from "commander";
import { BringupError, isBringupError } from "../../common/errors.js";
import { checkNewOutput } from "../../common/fs-errors.js";
import {
  type ConvertReport,
  type ConvertTarget,
  convertWeights,
  type Fp8Block,
  type InspectReport,
  inspectCheckpoint,
  isPackedDirectory,
  MXFP4_LAYOUTS,
  type Mxfp4Layout,
  type RelayoutRules,
  relayoutCheckpoint,
  type VerifyReport,
  verifyCheckpoints,
  verifyPacked,
} from "../../formats/index.js";
import { jsonChunks } from "../json-chunks.js";
import { tableLines } from "../table.js";
import { writePieces } from "../write-pieces.js";

/**
 * Subcommands of `bringup weights`, in help order. A new one (e.g. `make-tiny`) is a function
 * `(weights: Command) => void` in its own file, imported here and appended to this list.
 */
const SUBCOMMANDS: ((weights: Command) => void)[] = [addConvert, addRelayout, addInspect, addVerify];

export function registerWeights(program: Command): void {
  const weights = program
    .command("weights")
    .description("weight files: convert between MXFP4, FP8 and bf16 exactly, inspect, verify bit identity")
    .hook("preAction", boundHeapGrowth);
  for (const add of SUBCOMMANDS) add(weights);
}

/**
 * Lets the heap grow to 1.5x what is live between full collections, not V8's up to 4x. A checkpoint
 * of 262,144 tensors keeps some 120 MB of records live while `convert` proves its output (both
 * checkpoints open); at 4x, the garbage of reading them took the process past 512 MiB, the bound
 * weights-memory.test.ts holds every weights command to. The cost is more frequent collections of
 * a heap that is mostly records; the data itself is in buffers outside it.
 */
function boundHeapGrowth(): void {
  setFlagsFromString("--heap-growing-percent=50");
}

export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

function regex(flag: string, source: string | undefined): RegExp | undefined {
  if (source === undefined) return undefined;
  try {
    return new RegExp(source);
  } catch (error) {
    throw new BringupError(
      "BAD_ARGUMENT",
      `${flag} ${JSON.stringify(source)} is not a regular expression (${(error as Error).message}).`,
      {
        subject: flag,
      },
    );
  }
}

function workers(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 64) {
    throw new BringupError(
      "BAD_ARGUMENT",
      `--workers ${value}: give a whole number from 0 (no threads) to 64.`,
      { subject: "--workers" },
    );
  }
  return n;
}

interface ConvertFlags {
  to: ConvertTarget;
  fp8Block: Fp8Block;
  layout: Mxfp4Layout;
  allowInexact?: boolean;
  allowNonFinite?: boolean;
  workers?: string;
  include?: string;
  exclude?: string;
  json?: boolean;
  progress: boolean;
  verify: boolean;
}

function addConvert(weights: Command): void {
  weights
    .command("convert")
    .description(
      "convert a checkpoint into a new directory, tensor by tensor on every core, proving exactness",
    )
    .argument("<src>", "checkpoint directory (sharded or not) or .safetensors file")
    .argument("<dst>", "output directory; must not exist")
    .addOption(
      new Option("--to <format>", "target format").choices(["bf16", "fp8", "mxfp4"]).makeOptionMandatory(),
    )
    .addOption(
      new Option(
        "--fp8-block <layout>",
        "FP8 scales for MXFP4 sources: 128x128 tiles, or keep the per-32 block scales",
      )
        .choices(["tile128", "block32"])
        .default("tile128"),
    )
    .addOption(
      new Option(
        "--layout <order>",
        "MXFP4 code order with --to mxfp4: the public OCP order, or halves (each byte a value and the one 16 later, in the order the engine's fused MXFP4 decode reads with three shuffles fewer a block)",
      )
        .choices([...MXFP4_LAYOUTS])
        .default("ocp"),
    )
    .option("--allow-inexact", "convert tensors that cannot be exact, reporting the largest error")
    .option("--workers <n>", "worker threads (default 2 where two cores are idle, else 1; 0 = none)")
    .option(
      "--include <regex>",
      "plain weights to quantize for fp8 or mxfp4 (lossy; by default none is: only MXFP4 is converted)",
    )
    .option(
      "--exclude <regex>",
      "of those, weights to keep (default: embeddings, norms, lm_head, routers, biases; the source's modules_to_not_convert always)",
    )
    .option(
      "--allow-non-finite",
      "with --to fp8 --include: quantize NaN as NaN and infinities as the largest value instead of refusing",
    )
    .option("--json", "print the report as JSON")
    .option("--no-progress", "no progress bar")
    .option(
      "--no-verify",
      "skip decoding source and output to prove exactness bit for bit (it reads everything again)",
    )
    .action(async (src: string, dst: string, flags: ConvertFlags) => {
      // Ctrl-C or SIGTERM stops the conversion, which removes its temporary directory; the handlers
      // come first so a signal during the output check is handled too.
      const stop = new AbortController();
      const interrupt = (signal: NodeJS.Signals) => {
        process.exitCode = signal === "SIGINT" ? 130 : 143;
        stop.abort();
      };
      process.once("SIGINT", interrupt);
      process.once("SIGTERM", interrupt);
      const bar = flags.progress && process.stderr.isTTY ? progressBar() : undefined;
      let report: ConvertReport;
      try {
        await checkNewOutput(resolve(dst));
        report = await convertWeights(src, dst, {
          to: flags.to,
          layout: flags.layout,
          fp8Block: flags.fp8Block,
          allowInexact: flags.allowInexact === true,
          allowNonFinite: flags.allowNonFinite === true,
          workers: workers(flags.workers),
          include: regex("--include", flags.include),
          exclude: regex("--exclude", flags.exclude),
          onProgress: bar?.update,
          verify: flags.verify,
          signal: stop.signal,
        });
      } catch (error) {
        if (!(stop.signal.aborted && isBringupError(error) && error.code === "INTERRUPTED")) throw error;
        process.stderr.write(`bringup: ${error.message}\n`); // the exit code says which signal
        return;
      } finally {
        process.off("SIGINT", interrupt);
        process.off("SIGTERM", interrupt);
        bar?.stop();
      }
      if (flags.json) {
        await writePieces(jsonText(report));
        return;
      }
      const row = (t: ConvertReport["tensors"][number]) => [
        t.name,
        t.from,
        t.to,
        t.exact
          ? t.verified
            ? "exact, verified bit for bit"
            : "exact"
          : t.quantized
            ? "quantized (lossy, asked for)"
            : `INEXACT (${t.roundedValues === undefined ? `${t.inexactTiles} tiles, span ${t.maxBlockExponentSpan}` : `${t.roundedValues} values rounded`}, max abs error ${t.maxAbsError?.toExponential(3)}, max rel error ${t.maxRelError?.toExponential(3)})`,
      ];
      await writePieces(lines(tableLines(rows(["TENSOR", "FROM", "TO", "RESULT"], report.tensors, row))));
      const inexact = report.tensors.filter((t) => !t.exact && !t.quantized).length;
      const quantized = report.tensors.filter((t) => t.quantized).length;
      const lossy = [
        ...(quantized > 0 ? [`${quantized} quantized (lossy, --include)`] : []),
        ...(inexact > 0 ? [`${inexact} converted inexactly (--allow-inexact)`] : []),
      ];
      await writePieces([
        `\n${report.tensors.length} tensors, ${formatBytes(report.sourceBytes)} -> ${formatBytes(report.outputBytes)} in ${report.output}` +
          `; ${lossy.length > 0 ? lossy.join(", ") : "every value carried exactly"}` +
          `${report.copiedFiles.length > 0 ? `; copied ${report.copiedFiles.join(", ")}` : ""}\n`,
      ]);
    });
}

/** "PATTERN=REPLACEMENT" as a regular expression and its replacement (the last "=" splits). */
function rule(flag: string, value: string): { match: RegExp; to: string } {
  const at = value.lastIndexOf("=");
  if (at <= 0) {
    throw new BringupError(
      "BAD_ARGUMENT",
      `${flag} ${JSON.stringify(value)}: write it as PATTERN=REPLACEMENT.`,
      { subject: flag },
    );
  }
  return { match: regex(flag, value.slice(0, at)) as RegExp, to: value.slice(at + 1) };
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

interface RelayoutFlags {
  swapNibbles?: string;
  transpose?: string;
  gateUp?: string;
  gateUpTo: "concatenated" | "interleaved";
  splitExperts?: string;
  fuseExperts?: string;
  rename?: string[];
  json?: boolean;
}

function addRelayout(weights: Command): void {
  weights
    .command("relayout")
    .description("lossless re-layouts into a new directory: nibble order, transpose, gate/up, experts, names")
    .argument("<src>", "checkpoint directory or .safetensors file")
    .argument("<dst>", "output directory; must not exist")
    .option("--swap-nibbles <regex>", "MXFP4 weights whose nibble order flips (low-first <-> high-first)")
    .option("--transpose <regex>", "plain weights whose last two dimensions swap")
    .option("--gate-up <regex>", "weights whose gate/up rows regroup")
    .addOption(
      new Option("--gate-up-to <layout>", "gate/up target layout")
        .choices(["concatenated", "interleaved"])
        .default("concatenated"),
    )
    .option(
      "--split-experts <rule>",
      "PATTERN=REPLACEMENT with {e} for the expert index, e.g. 'experts\\.(\\w+)$=experts.{e}.$1'",
    )
    .option("--fuse-experts <rule>", "PATTERN=REPLACEMENT; PATTERN captures the index as (?<e>\\d+)")
    .option("--rename <rule>", "PATTERN=REPLACEMENT applied to every name (repeatable, in order)", collect)
    .option("--json", "print the report as JSON")
    .action(async (src: string, dst: string, flags: RelayoutFlags) => {
      const rules: RelayoutRules = {
        swapNibbles: regex("--swap-nibbles", flags.swapNibbles),
        transpose: regex("--transpose", flags.transpose),
        gateUp:
          flags.gateUp === undefined
            ? undefined
            : { match: regex("--gate-up", flags.gateUp) as RegExp, to: flags.gateUpTo },
        splitExperts:
          flags.splitExperts === undefined ? undefined : rule("--split-experts", flags.splitExperts),
        fuseExperts: flags.fuseExperts === undefined ? undefined : rule("--fuse-experts", flags.fuseExperts),
        rename: (flags.rename ?? []).map((r) => {
          const { match, to } = rule("--rename", r);
          return { from: match, to };
        }),
      };
      await checkNewOutput(resolve(dst));
      const report = await relayoutCheckpoint(src, dst, rules);
      if (flags.json) {
        await writePieces(jsonText(report));
        return;
      }
      await writePieces(lines(report.renamed.map((r) => `${r.from} -> ${r.to}`)));
      await writePieces([`${report.tensors} tensors written to ${report.output}\n`]);
    });
}

/** A bar on stderr with bytes done, bytes per second and the time left. */
function progressBar(): {
  update: (p: { doneBytes: number; totalBytes: number; tensor: string }) => void;
  stop: () => void;
} {
  const bar = new cliProgress.SingleBar(
    {
      format: "{bar} {percentage}% | {done} of {all} | {speed}/s | ETA {eta_formatted} | {tensor}",
      stream: process.stderr,
      hideCursor: true,
      etaBuffer: 20,
    },
    cliProgress.Presets.shades_classic,
  );
  const started = performance.now();
  let begun = false;
  return {
    update: ({ doneBytes, totalBytes, tensor }) => {
      const seconds = (performance.now() - started) / 1000;
      const payload = {
        done: formatBytes(doneBytes),
        all: formatBytes(totalBytes),
        speed: formatBytes(seconds > 0 ? Math.round(doneBytes / seconds) : 0),
        tensor: tensor.length > 40 ? `...${tensor.slice(-37)}` : tensor,
      };
      if (!begun) {
        bar.start(totalBytes, 0, payload);
        begun = true;
      }
      bar.update(doneBytes, payload);
    },
    stop: () => bar.stop(),
  };
}

function addInspect(weights: Command): void {
  weights
    .command("inspect")
    .description("list a checkpoint's tensors, the weights and formats they form, and totals")
    .argument("<dir>", "checkpoint directory or .safetensors file")
    .option("--json", "print JSON")
    .action(async (dir: string, flags: { json?: boolean }) => {
      const report = await inspectCheckpoint(dir);
      await writePieces(flags.json ? jsonText(report) : inspectText(report));
    });
}

/** A report as `JSON.stringify(report, null, 2)` and a line break, in pieces. */
function* jsonText(report: object): Generator<string> {
  yield* jsonChunks(report);
  yield "\n";
}

/** Each line, with its line break. */
function* lines(each: Iterable<string>): Generator<string> {
  for (const line of each) yield `${line}\n`;
}

/** A table's header and a row per item, made again each time they are iterated. */
function rows<T>(header: string[], items: readonly T[], row: (item: T) => string[]): Iterable<string[]> {
  return {
    *[Symbol.iterator]() {
      yield header;
      for (const item of items) yield row(item);
    },
  };
}

function* inspectText(report: InspectReport): Generator<string> {
  yield `${report.path}: ${report.files.length} file(s)${report.indexed ? " with index" : ""}\n`;
  for (const f of report.files) yield `  ${f.file}: ${f.tensors} tensors, ${formatBytes(f.bytes)}\n`;
  yield "\n";
  yield* lines(
    tableLines(
      rows(["WEIGHT", "FORMAT", "SHAPE", "BYTES", "STORED AS"], report.weights, (w) => [
        w.name,
        w.format,
        `[${w.shape.join(", ")}]`,
        formatBytes(w.bytes),
        w.parts.length > 1 ? w.parts.join(" + ") : "",
      ]),
    ),
  );
  yield "\n";
  for (const [kind, f] of Object.entries(report.formats))
    yield `${kind}: ${f.weights} weights, ${formatBytes(f.bytes)}\n`;
  yield `total: ${report.totals.tensors} tensors, ${formatBytes(report.totals.bytes)}, ${report.totals.parameters.toLocaleString("en-US")} parameters\n`;
  if (report.quantizationConfig !== undefined)
    yield `quantization_config: ${JSON.stringify(report.quantizationConfig)}\n`;
}

function addVerify(weights: Command): void {
  weights
    .command("verify")
    .description("compare two checkpoints weight by weight: checksums and bit identity of decoded values")
    .argument("<a>", "checkpoint directory or .safetensors file")
    .argument("<b>", "checkpoint directory or .safetensors file, or a packed directory of <a> (weights pack)")
    .option("--json", "print JSON")
    .action(async (a: string, b: string, flags: { json?: boolean }) => {
      // A packed directory (`weights pack`) is proven against its source tensor by tensor, rank by rank.
      const report = (await isPackedDirectory(b)) ? await verifyPacked(a, b) : await verifyCheckpoints(a, b);
      await writePieces(flags.json ? jsonText(report) : verifyText(report));
      if (!report.ok) process.exitCode = 1;
    });
}

function* verifyText(report: VerifyReport): Generator<string> {
  const header = ["WEIGHT", "FORMATS", "BYTES", "DECODED VALUES", "SHA256 A", "SHA256 B"];
  yield* lines(
    tableLines(
      rows(header, report.weights, (w) => [
        w.name,
        w.formatA === w.formatB ? w.formatA : `${w.formatA} vs ${w.formatB}`,
        w.bytesIdentical ? "same" : "differ",
        w.valuesIdentical
          ? "identical"
          : `${w.mismatches} differ (first at ${w.firstMismatch}, max ${w.maxAbsDifference})`,
        w.sha256A.slice(0, 12),
        w.sha256B.slice(0, 12),
      ]),
    ),
  );
  for (const name of report.onlyInA) yield `only in ${report.a}: ${name}\n`;
  for (const name of report.onlyInB) yield `only in ${report.b}: ${name}\n`;
  yield report.ok ? "OK: every weight decodes bit-identically\n" : "FAILED: the checkpoints differ\n";
}
