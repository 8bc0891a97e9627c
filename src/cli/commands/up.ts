import { dirname, resolve } from "node:path";
import { Presets, SingleBar } from "cli-progress";
import { type Command, InvalidArgumentError } from "commander";
import { BringupError } from "../../common/errors.js";
import { checkWritableDirectory } from "../../common/fs-errors.js";
import {
  type BringUpSummary,
  bringUp,
  DEFAULT_PORT,
  gatesPassed,
  type ProgressEvent,
  type StageEvent,
} from "../../flow/index.js";
import { verdictWords } from "../../records/index.js";
import { formatGateValue } from "../gate-value.js";
import { projectRoot } from "../root.js";
import { untilSignalled } from "../signals.js";
import { timeLeft } from "../time-left.js";
import { table } from "./ports.js";

interface UpFlags {
  endpoint?: string;
  reference?: string;
  model?: string;
  apiKey?: string;
  site: boolean;
  sweep: boolean;
  sweepConcurrency?: number[];
  json?: boolean;
  needleContexts?: number[];
  abPromptTokens?: number;
  abOutputTokens?: number;
  abBlocks?: number;
  cacheDir?: string;
  siteOut?: string;
  threads?: number;
}

function positiveInt(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new InvalidArgumentError("expected a whole number >= 1.");
  return Number(value);
}

function abBlocks(value: string): number {
  const blocks = positiveInt(value);
  if (blocks < 2) throw new InvalidArgumentError("an A/B needs at least 2 ABBA blocks for an interval.");
  return blocks;
}

function httpUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError("expected a URL such as http://127.0.0.1:8000.");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new InvalidArgumentError("expected an http:// or https:// URL.");
  return value;
}

/** Flags that only mean something with others, refused before anything starts. */
function checkFlagCombinations(flags: UpFlags): void {
  if (flags.endpoint === undefined) {
    const orphans = [
      flags.reference !== undefined ? "--reference" : undefined,
      flags.model !== undefined ? "--model" : undefined,
    ].filter((flag) => flag !== undefined);
    if (orphans.length > 0) {
      throw new BringupError(
        "UP_FLAG_NEEDS_ENDPOINT",
        `${orphans.join(" and ")} go${orphans.length === 1 ? "es" : ""} with --endpoint URL (an outside server); pass --endpoint too, or leave ${orphans.length === 1 ? "it" : "them"} out to run on the embedded engine.`,
      );
    }
  }
  if (flags.sweepConcurrency !== undefined && (!flags.sweep || flags.endpoint !== undefined)) {
    throw new BringupError(
      "UP_SWEEP_FLAG_CONFLICT",
      `--sweep-concurrency sizes the sweep on the embedded engine, which ${flags.sweep ? "--endpoint" : "--no-sweep"} leaves out; drop one of the two${flags.sweep ? " (sweep an endpoint with `bringup bench run --max-concurrency 1,2,4`)" : ""}.`,
    );
  }
}

function lengths(value: string): number[] {
  return value.split(",").map((s) => positiveInt(s.trim()));
}

export function registerUp(program: Command): void {
  program
    .command("up")
    .description(
      "bring a port up end to end: tiny reference weights, the embedded server, its gates and A/Bs, records, its page",
    )
    .argument("[port]", `port id, as in ports/<id>/ (default: ${DEFAULT_PORT})`)
    .option(
      "--endpoint <url>",
      "run the gates and A/Bs against this server instead of the embedded engine",
      httpUrl,
    )
    .option(
      "--reference <url>",
      "with --endpoint: the baseline build for gates that compare and the A/B's other arm (for vllm-gaudi, served with --disable-hybrid-kv-cache-manager)",
      httpUrl,
    )
    .option("--model <id>", "with --endpoint: the model id to send (default: the endpoint's own)")
    .option("--api-key <key>", "bearer token for the endpoints (default: $OPENAI_API_KEY)")
    .option("--no-site", "do not build the site at the end")
    .option(
      "--sweep-concurrency <list>",
      "concurrencies of the throughput-latency sweep of the build against the baseline (default: 1,2), e.g. 1,2,4,8,16,32,64",
      lengths,
    )
    .option("--no-sweep", "leave out the throughput-latency sweep")
    .option("--json", "print the summary as JSON")
    .option(
      "--needle-contexts <lengths>",
      "needle context lengths instead of the manifest's, e.g. 2048 for a quick run",
      lengths,
    )
    .option("--ab-prompt-tokens <n>", "A/B prompt length instead of the manifest's (quick runs)", positiveInt)
    .option("--ab-output-tokens <n>", "A/B output length instead of the manifest's (quick runs)", positiveInt)
    .option("--ab-blocks <n>", "ABBA blocks instead of the manifest's (at least 2)", abBlocks)
    .option("--cache-dir <dir>", "where tiny reference models are cached (default: .cache/bringup/models)")
    .option("--site-out <dir>", "where the site is built (default: site-out/ in the project root)")
    .option("--threads <n>", "matmul threads of each embedded engine (default: all cores)", positiveInt)
    .action(async (port: string | undefined, flags: UpFlags, command: Command) => {
      const id = port ?? DEFAULT_PORT;
      checkFlagCombinations(flags);
      // Outputs are checked before the long work, so a bad path fails in a second, not after the run.
      if (flags.cacheDir !== undefined) await checkWritableDirectory(resolve(flags.cacheDir));
      if (flags.siteOut !== undefined) await checkWritableDirectory(dirname(resolve(flags.siteOut)));
      const apiKey = flags.apiKey ?? process.env.OPENAI_API_KEY;
      const controller = new AbortController();
      void untilSignalled().then(() => controller.abort());
      const display = new StageDisplay(!flags.json && process.stderr.isTTY === true);
      // With --json stdout carries the summary alone; what the site builder prints goes to stderr.
      const restoreStdout = flags.json ? stdoutToStderr() : () => undefined;
      let summary: BringUpSummary;
      try {
        summary = await bringUp({
          root: projectRoot(command),
          port: id,
          ...(flags.endpoint !== undefined ? { endpoint: flags.endpoint } : {}),
          ...(flags.reference !== undefined ? { reference: flags.reference } : {}),
          ...(flags.model !== undefined ? { model: flags.model } : {}),
          ...(apiKey !== undefined && apiKey !== "" ? { apiKey } : {}),
          ...(flags.cacheDir !== undefined ? { cacheDir: resolve(flags.cacheDir) } : {}),
          ...(flags.needleContexts !== undefined ? { needleContexts: flags.needleContexts } : {}),
          benchmarkSize: {
            ...(flags.abPromptTokens !== undefined ? { promptTokens: flags.abPromptTokens } : {}),
            ...(flags.abOutputTokens !== undefined ? { outputTokens: flags.abOutputTokens } : {}),
            ...(flags.abBlocks !== undefined ? { blocks: flags.abBlocks } : {}),
          },
          sweep: flags.sweep && {
            ...(flags.sweepConcurrency !== undefined ? { concurrencies: flags.sweepConcurrency } : {}),
          },
          site: flags.site,
          ...(flags.siteOut !== undefined ? { siteDir: resolve(flags.siteOut) } : {}),
          ...(flags.threads !== undefined ? { threads: flags.threads } : {}),
          command: commandLine(id, flags),
          signal: controller.signal,
          onStage: (event) => display.stage(event),
          onProgress: (event) => display.progress(event),
        });
      } finally {
        display.stop();
        restoreStdout();
      }
      process.stdout.write(flags.json ? `${JSON.stringify(summary, null, 2)}\n` : `${render(summary)}\n`);
      if (!gatesPassed(summary)) process.exitCode = 1;
    });
}

/** Sends what is written to stdout to stderr until the returned function is called. */
function stdoutToStderr(): () => void {
  const write = process.stdout.write;
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
  return () => {
    process.stdout.write = write;
  };
}

/** The command the records name: what was run, without the API key. */
function commandLine(port: string, flags: UpFlags): string {
  const parts = ["bringup", "up", port];
  if (flags.endpoint !== undefined) parts.push("--endpoint", flags.endpoint);
  if (flags.reference !== undefined) parts.push("--reference", flags.reference);
  if (flags.model !== undefined) parts.push("--model", flags.model);
  if (flags.needleContexts !== undefined) parts.push("--needle-contexts", flags.needleContexts.join(","));
  if (flags.abPromptTokens !== undefined) parts.push("--ab-prompt-tokens", String(flags.abPromptTokens));
  if (flags.abOutputTokens !== undefined) parts.push("--ab-output-tokens", String(flags.abOutputTokens));
  if (flags.abBlocks !== undefined) parts.push("--ab-blocks", String(flags.abBlocks));
  if (flags.sweepConcurrency !== undefined)
    parts.push("--sweep-concurrency", flags.sweepConcurrency.join(","));
  if (!flags.sweep) parts.push("--no-sweep");
  return parts.join(" ");
}

const MARKS: Record<Exclude<StageEvent["status"], "started">, string> = {
  done: "done",
  skipped: "skipped",
  failed: "FAILED",
};
const SPINNER = ["-", "\\", "|", "/"];

/**
 * The stage list as the run goes: on a terminal, a bar (items done, or a spinner) for the stage
 * running and one line for each stage that ended; elsewhere, one plain line per event.
 */
class StageDisplay {
  private bar: SingleBar | undefined;
  private timer: NodeJS.Timeout | undefined;
  private frame = 0;
  private readonly started = performance.now();
  private stageStarted = performance.now();

  constructor(private readonly tty: boolean) {}

  stage(event: StageEvent): void {
    if (event.status === "started") {
      if (this.tty) this.open(event.stage);
      else this.line(`${event.stage} ...`);
      return;
    }
    this.close();
    const seconds = ((event.elapsedMs ?? 0) / 1000).toFixed(1);
    this.line(`${event.stage} ${MARKS[event.status]} in ${seconds} s: ${event.detail ?? ""}`);
  }

  progress(event: ProgressEvent): void {
    if (this.bar) {
      this.bar.setTotal(event.total);
      this.bar.update(event.done, {
        item: event.item,
        left: timeLeft(performance.now() - this.stageStarted, event),
      });
    } else if (!this.tty) {
      this.line(`  ${event.stage} ${event.done}/${event.total} ${event.item}`);
    }
  }

  stop(): void {
    this.close();
  }

  private open(stage: string): void {
    this.stageStarted = performance.now();
    this.bar = new SingleBar(
      {
        stream: process.stderr,
        format: `  {spinner} ${stage.padEnd(10)} [{bar}] {value}/{total} {item} ({duration}s{left})`,
        hideCursor: true,
        clearOnComplete: true,
      },
      Presets.shades_classic,
    );
    this.bar.start(1, 0, { spinner: SPINNER[0], item: "", left: "" });
    this.timer = setInterval(() => {
      this.frame = (this.frame + 1) % SPINNER.length;
      this.bar?.update({ spinner: SPINNER[this.frame] });
    }, 200);
  }

  private close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.bar?.stop();
    this.bar = undefined;
  }

  private line(text: string): void {
    const at = ((performance.now() - this.started) / 1000).toFixed(1).padStart(6);
    process.stderr.write(`[${at} s] ${text}\n`);
  }
}

/** The summary: gates, figures with their methods, what was left out, where the page is, the stage times. */
function render(summary: BringUpSummary): string {
  const parts: string[] = [
    `bringup up ${summary.port} on ${summary.target}${summary.aborted ? " (stopped; what was recorded is kept)" : ""}`,
    "",
    table([
      ["gate", "status", "value", "result"],
      ...summary.gates.map((g) => [g.kind, g.status, formatGateValue(g), g.summary]),
    ]),
  ];
  if (summary.figures.length > 0) {
    parts.push(
      "",
      table([
        ["figure", "method", "interval", "record"],
        ...summary.figures.map((f) => [
          f.ratio === undefined
            ? f.label
            : `${f.label}: ${f.interval !== undefined ? verdictWords(f.interval) : ""}${f.ratio}x`,
          f.method,
          f.interval ? `${f.interval[0]}x to ${f.interval[1]}x` : "-",
          f.record,
        ]),
      ]),
    );
  }
  if (summary.sweep !== undefined) {
    parts.push(
      "",
      `throughput-latency sweep ${summary.sweep.id} (single runs, both arms in one run; medians per request)`,
      table([
        ["concurrency", "arm", "output tok/s", "TTFT ms", "TPOT ms", "failed"],
        ...summary.sweep.points.map((p) => [
          String(p.concurrency),
          p.arm,
          p.outputTokPerS.toFixed(1),
          p.ttftMedianMs.toFixed(0),
          p.tpotMedianMs.toFixed(1),
          String(p.failed),
        ]),
      ]),
    );
  }
  for (const skipped of summary.skippedBenchmarks)
    parts.push(`A/B ${skipped.record} not measured: ${skipped.reason}`);
  if (summary.recordsDir !== undefined && summary.records.length > 0) {
    parts.push(
      "",
      `${summary.records.length} record${summary.records.length === 1 ? "" : "s"} kept locally in ${summary.recordsDir} (gitignored); \`bringup records publish ${summary.port} --dry-run\` shows what publishing them would add`,
    );
  }
  parts.push(
    "",
    table([
      ["stage", "status", "seconds"],
      ...summary.stages.map((s) => [s.stage, s.status, s.seconds.toFixed(1)]),
    ]),
    "",
    summary.page !== undefined
      ? `page: ${summary.page} (preview: bringup site serve)`
      : "page: not built (--no-site or stopped)",
  );
  return parts.join("\n");
}
