import { resolve } from "node:path";
import { Presets, SingleBar } from "cli-progress";
import { type Command, Option } from "commander";
import {
  type AbResult,
  armFingerprint,
  chainRecord,
  metricRows,
  type RunResult,
  runAb,
  runBench,
  runId,
  runRecords,
  shellSwitch,
  slug,
  TRIAL_METRICS,
  trialMetric,
  writeAbReportDir,
  writeRunReportDir,
} from "../../bench/index.js";
import { findPort, loadCatalog, localResultsDir } from "../../catalog/index.js";
import { normalizeBaseUrl } from "../../client/index.js";
import { BringupError } from "../../common/errors.js";
import { checkNewOutput } from "../../common/fs-errors.js";
import { abVerdict, appendRecord, type BenchRecord, NOISY_INTERVAL_SPAN } from "../../records/index.js";
import { projectRoot } from "../root.js";
import {
  buildWorkload,
  list,
  percentilesOf,
  positiveInt,
  positiveNumber,
  resolveTarget,
  slos,
  type WorkloadFlags,
  workloadOptions,
} from "./bench-workload.js";
import { table } from "./ports.js";
import { findRecord, registerRecordsCompare } from "./records-compare.js";

async function resultsDirOf(command: Command, portId: string | undefined): Promise<string | undefined> {
  if (portId === undefined) return undefined;
  const root = projectRoot(command);
  return localResultsDir(root, findPort(await loadCatalog(root), portId).id);
}

function progressBar(enabled: boolean, total: number, what: string): SingleBar | undefined {
  if (!enabled || !process.stderr.isTTY) return undefined;
  const bar = new SingleBar(
    {
      stream: process.stderr,
      format: `${what} [{bar}] {value}/{total} requests | {failed} failed | {eta_formatted}`,
      hideCursor: true,
    },
    Presets.shades_classic,
  );
  bar.start(total, 0, { failed: 0 });
  return bar;
}

function commandLine(): string {
  return ["bringup", ...process.argv.slice(2)].join(" ");
}

/** Stops a run cleanly on Ctrl-C: requests in flight are aborted, what was measured is kept. */
function interruptible(): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once("SIGINT", stop);
  return { signal: controller.signal, dispose: () => process.off("SIGINT", stop) };
}

/** `bringup bench run|ab|chain`, and `records compare` in the records group (register after it). */
export function registerBench(program: Command): void {
  registerRecordsCompare(program);
  const bench = program
    .command("bench")
    .description("measure an OpenAI-compatible endpoint, and compare builds with interleaved A/Bs");

  workloadOptions(
    bench
      .command("run")
      .description("one arm: fixed concurrency or open-loop arrivals, one load point or a sweep")
      .requiredOption("--endpoint <url>", "the server's base URL, e.g. http://127.0.0.1:8000")
      .option(
        "--max-concurrency <n,...>",
        "most requests in flight (a comma list sweeps)",
        list(positiveInt("--max-concurrency")),
      )
      .option(
        "--request-rate <r,...>",
        "requests per second, or inf (a comma list sweeps)",
        list(positiveNumber("--request-rate")),
      ),
  ).action(
    async (
      flags: WorkloadFlags & { endpoint: string; maxConcurrency?: number[]; requestRate?: number[] },
      command: Command,
    ) => {
      if (flags.reportDir) await checkNewOutput(resolve(flags.reportDir));
      const { target, fingerprint: probed } = await resolveTarget(flags.endpoint, "--endpoint", flags);
      const workload = await buildWorkload(flags);
      const { metrics: percentileMetrics, percentiles } = percentilesOf(flags);
      const resultsDir = await resultsDirOf(command, flags.portId);
      const fingerprint = armFingerprint(probed, workload.hash);
      const rates = flags.requestRate ?? [Number.POSITIVE_INFINITY];
      const concurrencies: (number | undefined)[] = flags.maxConcurrency ?? [undefined];
      const id = runId("run");
      const points: { load: string; result: RunResult }[] = [];
      const recordIds: string[] = [];
      const { signal, dispose } = interruptible();
      try {
        for (const rate of rates) {
          for (const concurrency of concurrencies) {
            if (signal.aborted) break;
            const load = [
              Number.isFinite(rate) ? `${rate} req/s` : "all at once",
              concurrency !== undefined ? `concurrency ${concurrency}` : "",
            ]
              .filter(Boolean)
              .join(", ");
            const bar = progressBar(flags.progress && !flags.json, workload.requests.length, load);
            let failed = 0;
            const result = await runBench({
              target,
              workload,
              requestRate: rate,
              burstiness: flags.burstiness,
              ...(concurrency !== undefined ? { maxConcurrency: concurrency } : {}),
              numWarmups: flags.numWarmups,
              seed: flags.seed,
              percentiles,
              ...(flags.goodput ? { slos: slos(flags.goodput) } : {}),
              stallTimeoutMs: flags.stallTimeout * 1000,
              requestTimeoutMs: flags.requestTimeout * 1000,
              signal,
              onRequest: (r) => {
                if (!r.ok) failed++;
                bar?.increment({ failed });
              },
            });
            bar?.stop();
            points.push({ load, result });
            if (resultsDir && flags.portId) {
              const pointId = `${id}-${slug(load)}`;
              for (const record of runRecords(result, {
                port: flags.portId,
                id: pointId,
                context: `${workload.name}, ${workload.requests.length} prompts, ${load}`,
                fingerprint,
                command: commandLine(),
              })) {
                recordIds.push((await appendRecord(resultsDir, record)).id);
              }
            }
            if (!flags.json) {
              process.stdout.write(
                `\n${target.model} at ${target.url}, ${workload.name}, ${load}\n${table(metricRows(result.metrics, percentileMetrics).map((row) => [...row]))}\n`,
              );
              if (result.tokenizerSkipped)
                process.stdout.write(`tokenizer cross-check skipped: ${result.tokenizerSkipped}\n`);
            }
          }
        }
      } finally {
        dispose();
      }
      if (flags.reportDir) {
        await writeRunReportDir(flags.reportDir, {
          title: `bench run ${id}`,
          endpoint: target.url,
          model: target.model,
          workload: `${workload.name} (${workload.requests.length} prompts)`,
          command: commandLine(),
          points: points.map((p) => ({ load: p.load, metrics: p.result.metrics })),
          percentileMetrics,
          recordIds,
        });
      }
      if (flags.json) {
        const report = {
          id,
          endpoint: target.url,
          model: target.model,
          workload: { name: workload.name, hash: workload.hash, prompts: workload.requests.length },
          points: points.map((p) => ({
            load: p.load,
            metrics: p.result.metrics,
            tokenizer_skipped: p.result.tokenizerSkipped,
          })),
          records: recordIds,
        };
        process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      }
      if (points.some((p) => p.result.metrics.completed === 0)) process.exitCode = 1;
    },
  );

  workloadOptions(
    bench
      .command("ab")
      .description(
        "A/B in ABBA blocks: two live endpoints (same-node-ab), or one restarted by --switch (same-pod-ab)",
      )
      .option("--a <url>", "arm a's base URL")
      .option("--b <url>", "arm b's base URL (with --switch, defaults to --a)")
      .option("--a-name <name>", "arm a's name", "a")
      .option("--b-name <name>", "arm b's name", "b")
      .option("--switch <cmd>", "shell command that restarts the server as arm $BRINGUP_BENCH_ARM (a or b)")
      .option(
        "--switch-timeout <s>",
        "how long a switched server may take to answer /health",
        positiveNumber("--switch-timeout"),
        600,
      )
      .option("--blocks <n>", "ABBA blocks (each gives one paired ratio)", positiveInt("--blocks"), 5)
      .addOption(
        new Option("--metric <name>", "the figure each trial contributes")
          .choices(Object.keys(TRIAL_METRICS))
          .default("output_throughput"),
      )
      .option("--max-concurrency <n>", "most requests in flight per trial", positiveInt("--max-concurrency"))
      .option(
        "--request-rate <r>",
        "requests per second per trial, or inf",
        positiveNumber("--request-rate"),
      ),
  ).action(
    async (
      flags: WorkloadFlags & {
        a?: string;
        b?: string;
        aName: string;
        bName: string;
        switch?: string;
        switchTimeout: number;
        blocks: number;
        metric: string;
        maxConcurrency?: number;
        requestRate?: number;
      },
      command: Command,
    ) => {
      if (flags.reportDir) await checkNewOutput(resolve(flags.reportDir));
      const urlA = flags.a;
      const urlB = flags.b ?? (flags.switch ? flags.a : undefined);
      if (!urlA || !urlB) {
        throw new BringupError(
          "CLI_AB_ARMS",
          "bench ab needs --a URL and --b URL, or --a URL with --switch CMD.",
        );
      }
      const spec = trialMetric(flags.metric);
      const names = { a: flags.aName, b: flags.bName };
      const switchTo = flags.switch
        ? shellSwitch(flags.switch, `${normalizeBaseUrl(urlA)}/health`, names, {
            readyTimeoutMs: flags.switchTimeout * 1000,
          })
        : undefined;
      // With a switch, each arm is identified while it is the one running.
      if (switchTo) await switchTo("a");
      const { target: targetA, fingerprint: fingerprintA } = await resolveTarget(urlA, "--a", flags);
      if (switchTo) await switchTo("b");
      const { target: targetB, fingerprint: fingerprintB } = await resolveTarget(
        urlB,
        flags.b === undefined ? "--a" : "--b",
        flags,
      );
      const workload = await buildWorkload(flags);
      const resultsDir = await resultsDirOf(command, flags.portId);
      const { percentiles } = percentilesOf(flags);
      const bar = progressBar(flags.progress && !flags.json, flags.blocks * 4, "A/B trials");
      const { signal, dispose } = interruptible();
      let result: AbResult;
      try {
        result = await runAb({
          a: { name: names.a, target: targetA, fingerprint: fingerprintA },
          b: { name: names.b, target: targetB, fingerprint: fingerprintB },
          workload,
          blocks: flags.blocks,
          metric: spec.name,
          ...(flags.maxConcurrency !== undefined ? { maxConcurrency: flags.maxConcurrency } : {}),
          ...(flags.requestRate !== undefined ? { requestRate: flags.requestRate } : {}),
          burstiness: flags.burstiness,
          numWarmups: flags.numWarmups,
          seed: flags.seed,
          percentiles,
          stallTimeoutMs: flags.stallTimeout * 1000,
          requestTimeoutMs: flags.requestTimeout * 1000,
          ...(switchTo ? { switchTo } : {}),
          ...(resultsDir && flags.portId
            ? { records: { dir: resultsDir, port: flags.portId, command: commandLine() } }
            : {}),
          signal,
          onTrial: () => bar?.increment({ failed: 0 }),
        });
      } finally {
        bar?.stop();
        dispose();
      }
      if (flags.reportDir) {
        await writeAbReportDir(flags.reportDir, { result, names, unit: spec.unit, command: commandLine() });
      }
      const i = result.interval;
      if (flags.json) {
        process.stdout.write(
          `${JSON.stringify(
            {
              method: result.method,
              metric: result.metric,
              better: result.better,
              arms: names,
              ratio: i.estimate,
              ci95: [i.low, i.high],
              cv: result.cv,
              ratios: result.ratios,
              trials: result.trials.map((t) => ({ block: t.block, arm: t.arm, value: t.value })),
              record: result.record?.id,
            },
            null,
            2,
          )}\n`,
        );
        return;
      }
      const rows = result.trials.map((t, n) => [
        String(n + 1),
        String(t.block + 1),
        names[t.arm],
        t.value.toFixed(3),
      ]);
      const verdict = {
        "no-difference": `no difference was shown between ${names.b} and ${names.a}: the interval holds 1`,
        noisy: `noisy: the interval spans more than ${NOISY_INTERVAL_SPAN}x, too wide to headline; run more blocks`,
        shown: `above 1, ${names.b} is better`,
      }[abVerdict([i.low, i.high])];
      process.stdout.write(
        `${table([["trial", "block", "arm", `${result.metric} (${spec.unit})`], ...rows])}\n\n` +
          `${result.method}: ${names.b} against ${names.a}, ratio ${i.estimate.toFixed(3)}x ` +
          `(95% interval ${i.low.toFixed(3)}x to ${i.high.toFixed(3)}x, CV ${(result.cv * 100).toFixed(1)}%, ${result.ratios.length} ABBA blocks); ${verdict}\n` +
          (result.record ? `recorded as ${result.record.id}\n` : ""),
      );
    },
  );

  bench
    .command("chain")
    .description("compose A/B records that share arms (A/B, then B/C) into a chained-ab record")
    .argument("<records...>", "record ids (<port>/<slug>) in chain order")
    .option("--id <slug>", "the chained record's slug (default: chain of the ids)")
    .option("--dry-run", "print the chained figure without appending the record")
    .option("--json", "print the record as JSON")
    .action(
      async (ids: string[], flags: { id?: string; dryRun?: boolean; json?: boolean }, command: Command) => {
        const root = projectRoot(command);
        const catalog = await loadCatalog(root, { local: true });
        const records = ids.map((id) => findRecord(catalog.ports, id));
        const first = records[0] as BenchRecord;
        const port = findPort(catalog, first.port);
        const record = chainRecord(records, {
          port: first.port,
          id: flags.id ?? slug(`chain-${records.map((r) => r.id.split("/")[1]).join("-")}`),
          command: commandLine(),
        });
        const written = flags.dryRun ? record : await appendRecord(localResultsDir(root, port.id), record);
        if (flags.json) {
          process.stdout.write(`${JSON.stringify(written, null, 2)}\n`);
          return;
        }
        const c = record.comparison;
        process.stdout.write(
          `chained-ab ${record.id}: ratio ${c?.figure.shape === "point" ? c.figure.value : "?"}x, 95% interval ${c?.ci95?.join("x to ")}x (${record.context})${flags.dryRun ? " [not recorded]" : ""}\n`,
        );
      },
    );
}
