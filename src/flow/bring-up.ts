import { join } from "node:path";
import type { AbResult } from "../bench/index.js";
import {
  type Build,
  describeConversion,
  type Gate as GateSpec,
  loadCatalog,
  localResultsDir,
  RESULTS_DIR,
  referenceSeries,
  workloadSeries,
} from "../catalog/index.js";
import { checkEndpoint, describeEndpoint } from "../client/index.js";
import { BringupError, isBringupError } from "../common/errors.js";
import { type Architecture, type LoadedModel, readCorpus } from "../engine/index.js";
import type { BenchRecord } from "../records/index.js";
import { buildSite, formatRecordFigure } from "../site/index.js";
import { abWorkloadDifferences, planAb, sized } from "./ab-plan.js";
import { runReferenceAb } from "./ab-stage.js";
import {
  type BringUpOptions,
  EMBEDDED_REQUEST_TIMEOUT_MS,
  ENDPOINT_REQUEST_TIMEOUT_MS,
} from "./bring-up-options.js";
import { checkBuildSwitches } from "./build-check.js";
import {
  type ConvertedWeights,
  convertReferenceWeights,
  referenceConversions,
  removeConverted,
} from "./convert-stage.js";
import { DEFAULT_PORT } from "./default-port.js";
import type { EmbeddedServer } from "./embedded-server.js";
import { gateSummary, gateWorkloadDifferences, kvCapacityTheory, notRun, planGate } from "./gate-plan.js";
import { type ReferenceGateRun, runReferenceGate } from "./gate-stage.js";
import { loadPort, makeWeights, modelCacheDir } from "./port-weights.js";
import { nextSeriesId, recordIds } from "./record-ids.js";
import { declaredBuilds, describeReferencePlan, ownBuild } from "./reference-builds.js";
import { type Servers, startServers } from "./reference-servers.js";
import { StageClock } from "./stage-clock.js";
import type { BringUpSummary, FigureSummary, GateSummary, SkippedBenchmark } from "./summary.js";
import {
  describeSweep,
  runReferenceSweep,
  type SweepSummary,
  sweepBlocked,
  sweepSize,
} from "./sweep-stage.js";
import { promptTokens } from "./tiny-model.js";

/**
 * Brings a port up end to end: loads its manifest, makes (or reuses) its tiny reference weights,
 * serves them on the embedded engine (or uses `endpoint`), runs the reference section's gates and
 * A/Bs, appends every record to the port's local store as it is measured (a quick run's sizes name
 * its own series), builds the site (local records marked local) and stops
 * every server, also when it fails or is aborted. Gate failures are in the summary, not thrown;
 * what keeps the run from starting (no reference section, no model code) throws BringupError.
 */
export async function bringUp(options: BringUpOptions): Promise<BringUpSummary> {
  const portId = options.port ?? DEFAULT_PORT;
  const external = options.endpoint !== undefined;
  if (options.reference !== undefined && !external) {
    throw new BringupError(
      "UP_REFERENCE_WITHOUT_ENDPOINT",
      "--reference names the baseline of an outside endpoint; pass --endpoint URL as well, or neither to run on the embedded engine.",
    );
  }
  // An outside endpoint is checked before any work, so a dead one stops the run in seconds.
  const endpoints = external ? await checkEndpoints(options) : undefined;
  const signal = options.signal;
  const aborted = () => signal?.aborted === true;
  const clock = new StageClock(options.onStage);
  const command = options.command ?? `bringup up ${portId}`;
  const servers: Servers = { gateBaselines: new Map() };
  const allServers = () =>
    [servers.build, servers.baseline, servers.retrieval, ...servers.gateBaselines.values()].filter(
      (s): s is EmbeddedServer => s !== undefined,
    );
  const closeAll = async () => {
    await Promise.all(allServers().map((s) => s.close()));
  };
  // Closing the servers at once makes a request in flight fail fast instead of finishing its work.
  const onAbort = () => void closeAll().catch(() => undefined);
  signal?.addEventListener("abort", onAbort, { once: true });

  const gates: GateSummary[] = [];
  const figures: FigureSummary[] = [];
  const skippedBenchmarks: SkippedBenchmark[] = [];
  const records: string[] = [];
  let recordsDir: string | undefined;
  let converted: ConvertedWeights | undefined;
  let page: string | undefined;
  let siteDir: string | undefined;
  let sweepSummary: SweepSummary | undefined;
  try {
    const { port, reference, portModel } = await clock.run("manifest", async () => {
      const value = await loadPort(options.root, portId, external);
      return { value, detail: describeReferencePlan(portId, value.reference) };
    });
    // The local store (gitignored): `bringup records publish` moves records into ports/<id>/results/.
    const resultsDir = localResultsDir(options.root, portId);
    recordsDir = resultsDir;
    const publishedDir = join(port.dir, RESULTS_DIR);
    const needleContexts = options.needleContexts;
    const retrievalGates = reference.gates.filter(
      (g): g is Extract<GateSpec, { kind: "needles" }> => g.kind === "needles" && g.model === "retrieval",
    );
    const corpus = await readCorpus();

    let models: { tiny: LoadedModel; retrieval?: LoadedModel } | undefined;
    if (external) {
      clock.skip("weights", `--endpoint ${options.endpoint}: the endpoint serves its own weights`);
      clock.skip("convert", "no conversion: the endpoint's weights are served as they are");
      clock.skip("serve", `no embedded server: ${endpoints?.join("; ")}`);
    } else if (!aborted()) {
      const code = portModel as Architecture;
      models = await clock.run("weights", () =>
        makeWeights(port, reference, code, corpus, retrievalGates, needleContexts, options),
      );
      checkBuildSwitches(portId, declaredBuilds(reference), models.tiny.model.switches);
      const conversions = referenceConversions(reference);
      if (conversions.length === 0 || aborted()) {
        clock.skip(
          "convert",
          `no conversion: ${portId}'s reference weights are served as the model code writes them`,
        );
      } else {
        const source = models.tiny.directory as string;
        converted = await clock.run("convert", async () => {
          const value = await convertReferenceWeights(
            source,
            conversions,
            join(modelCacheDir(options), portId),
            signal,
          );
          return {
            value,
            detail: `${conversions.map(describeConversion).join("; ")} (${value.workDir}, removed at the end)`,
          };
        });
      }
      if (!aborted()) {
        const loaded = { ...models, converted: converted?.models ?? new Map<string, LoadedModel>() };
        await clock.run("serve", () => startServers(portId, reference, loaded, servers, options));
      }
    }

    if (aborted()) clock.skip("gates", "stopped before the gates");
    else {
      await clock.run("gates", async () => {
        const series = referenceSeries(port.manifest).gates;
        for (const [index, spec] of reference.gates.entries()) {
          if (aborted()) {
            gates.push(notRun(spec, "UP_ABORTED", "the run was stopped before this gate"));
            continue;
          }
          options.onProgress?.({
            stage: "gates",
            done: index,
            total: reference.gates.length,
            item: spec.kind,
          });
          const planned = planGate(spec, reference, servers, options, models?.tiny, converted);
          if ("notRun" in planned) {
            gates.push(notRun(spec, planned.notRun.code, planned.notRun.summary));
            continue;
          }
          const run: ReferenceGateRun = {
            spec,
            series: workloadSeries(series[index] as string, gateWorkloadDifferences(spec, needleContexts)),
            ...planned,
          };
          const theory = models && kvCapacityTheory(spec, reference, models.tiny);
          const result = await untilAborted(
            runReferenceGate(
              run,
              {
                port: portId,
                resultsDir,
                publishedDir,
                command,
                corpus,
                ...(needleContexts !== undefined ? { needleContexts } : {}),
                ...(theory !== undefined ? { theoreticalRatio: theory } : {}),
                request: {
                  timeoutMs: external ? ENDPOINT_REQUEST_TIMEOUT_MS : EMBEDDED_REQUEST_TIMEOUT_MS,
                  ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
                },
              },
              index,
            ),
            signal,
          );
          if (result === undefined || (aborted() && result.outcome.status === "not-run")) {
            gates.push(notRun(spec, "UP_ABORTED", "the run was stopped while this gate ran"));
            continue;
          }
          gates.push(gateSummary(result.outcome, result.record));
          if (result.record) {
            records.push(result.record.id);
            figures.push(figureSummary(result.record));
          }
        }
        options.onProgress?.({
          stage: "gates",
          done: reference.gates.length,
          total: reference.gates.length,
          item: "done",
        });
        const passed = gates.filter((g) => g.status === "passed").length;
        const ran = gates.filter((g) => g.status !== "not-run").length;
        if (ran === 0) {
          const codes = [...new Set(gates.map((g) => g.code ?? g.status))];
          return { value: undefined, detail: `no gate ran (${codes.join(", ")})`, skipped: true };
        }
        return { value: undefined, detail: `${passed} of ${gates.length} passed` };
      });
    }
    const sweep = sweepSize(options.sweep);
    const blocked = sweep && sweepBlocked(reference, sweep);
    if (aborted()) clock.skip("sweep", "stopped before the sweep");
    else if (sweep === undefined) clock.skip("sweep", "--no-sweep");
    else if (external)
      clock.skip(
        "sweep",
        "the sweep runs on the embedded engine; sweep an endpoint with `bringup bench run --max-concurrency 1,2,4,...`",
      );
    else if (blocked !== undefined) clock.skip("sweep", blocked);
    else {
      sweepSummary = await clock.run("sweep", async () => {
        try {
          const measured = await runReferenceSweep(
            [
              { server: servers.baseline as EmbeddedServer, build: reference.baseline as Build },
              { server: servers.build as EmbeddedServer, build: ownBuild(reference) },
            ],
            {
              port: portId,
              resultsDir,
              command,
              size: sweep,
              tokens: promptTokens(models?.tiny as LoadedModel),
              ...(signal ? { signal } : {}),
              onPoint: (point, done, total) =>
                options.onProgress?.({
                  stage: "sweep",
                  done,
                  total,
                  item: `c${point.concurrency} ${point.arm} ${point.result.metrics.outputThroughput.toFixed(1)} tok/s`,
                }),
            },
          );
          records.push(...measured.records);
          if (measured.summary.points.length === 0)
            return { value: undefined, detail: "stopped before the first point", skipped: true };
          return { value: measured.summary, detail: describeSweep(measured.summary) };
        } catch (error) {
          if (aborted()) return { value: undefined, detail: "stopped during the sweep", skipped: true };
          if (!isBringupError(error)) throw error;
          // A sweep that cannot measure leaves the gates' verdict and the A/Bs to run.
          const detail = `${error.message} (${error.code})`;
          return { value: undefined, detail, failed: true };
        }
      });
    }

    // The A/Bs restart the build server as each arm; the other servers are done.
    await Promise.all(
      allServers()
        .filter((s) => s !== servers.build)
        .map((s) => s.close()),
    );

    if (aborted()) clock.skip("benchmarks", "stopped before the A/Bs");
    else if (reference.benchmarks.length === 0)
      clock.skip("benchmarks", "the reference section names no A/B");
    else {
      await clock.run("benchmarks", async () => {
        for (const declared of reference.benchmarks) {
          const spec = sized(declared, options.benchmarkSize);
          if (aborted()) {
            skippedBenchmarks.push({ record: spec.record, reason: "the run was stopped before this A/B" });
            continue;
          }
          const arms = planAb(spec, reference, servers, options, converted);
          if ("skip" in arms) {
            skippedBenchmarks.push({ record: spec.record, ...arms.skip });
            continue;
          }
          let result: AbResult | undefined;
          try {
            result = await runReferenceAb(spec, {
              port: portId,
              resultsDir,
              command,
              id: nextSeriesId(
                workloadSeries(spec.record, abWorkloadDifferences(declared, spec)),
                await recordIds(resultsDir, publishedDir),
              ),
              arms: arms.arms,
              ...(arms.switchTo ? { switchTo: arms.switchTo } : {}),
              ...(options.model !== undefined ? { model: options.model } : {}),
              ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
              ...(models ? { tokens: promptTokens(models.tiny) } : {}),
              stallTimeoutMs: external ? ENDPOINT_REQUEST_TIMEOUT_MS : EMBEDDED_REQUEST_TIMEOUT_MS,
              requestTimeoutMs: external ? ENDPOINT_REQUEST_TIMEOUT_MS : EMBEDDED_REQUEST_TIMEOUT_MS,
              ...(signal ? { signal } : {}),
              onTrial: (trial, done, total) =>
                options.onProgress?.({
                  stage: "benchmarks",
                  done,
                  total,
                  item: `${spec.metric} ${arms.arms[trial.arm].name} ${trial.value.toFixed(2)}`,
                }),
            });
          } catch (error) {
            if (!isBringupError(error)) throw error;
            skippedBenchmarks.push({
              record: spec.record,
              reason: aborted() ? `stopped: ${error.message}` : error.message,
              code: aborted() ? "UP_ABORTED" : error.code,
            });
          }
          if (result === undefined) continue;
          records.push(...result.trialRecords.map((r) => r.id));
          if (result.record) {
            records.push(result.record.id);
            figures.push(figureSummary(result.record));
          }
        }
        const measured = reference.benchmarks.length - skippedBenchmarks.length;
        const detail = `${measured} of ${reference.benchmarks.length} measured`;
        return { value: undefined, detail, ...(measured === 0 ? { skipped: true } : {}) };
      });
    }
    await servers.build?.close();

    if (aborted()) clock.skip("site", "stopped before the site");
    else if (options.site === false) clock.skip("site", "--no-site");
    else if (records.length === 0)
      clock.skip("site", "no gate ran and no A/B was measured: nothing new to show");
    else {
      siteDir = options.siteDir ?? join(options.root, "site-out");
      const out = siteDir;
      page = await clock.run("site", async () => {
        const catalog = await loadCatalog(options.root, { local: true });
        const built = await buildSite(catalog, out, signal ? { signal } : {}).catch((error: unknown) => {
          if (aborted()) return undefined;
          throw error;
        });
        if (built === undefined)
          return { value: undefined, detail: "stopped; nothing was written", skipped: true };
        const path = join(built.outDir, "ports", `${portId}.html`);
        return { value: path, detail: `${built.pages.length} pages; ${portId}'s page is ${path}` };
      });
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    await clock.run("stop", async () => {
      const started = allServers().length;
      await closeAll();
      if (converted !== undefined) await removeConverted(converted.workDir);
      return {
        value: undefined,
        detail: started === 0 ? "no embedded server ran" : `all ${started} embedded servers stopped`,
      };
    });
  }
  return {
    port: portId,
    target: options.endpoint ?? "embedded",
    aborted: aborted(),
    gates,
    figures,
    skippedBenchmarks,
    ...(sweepSummary !== undefined ? { sweep: sweepSummary } : {}),
    servers: {
      ...(servers.build ? { build: servers.build.url } : {}),
      ...(servers.baseline ? { baseline: servers.baseline.url } : {}),
      ...(servers.retrieval ? { retrieval: servers.retrieval.url } : {}),
    },
    records,
    ...(recordsDir !== undefined ? { recordsDir } : {}),
    ...(page !== undefined ? { page } : {}),
    ...(siteDir !== undefined ? { siteDir } : {}),
    stages: clock.timings,
  };
}

function figureSummary(record: BenchRecord): FigureSummary {
  const comparison = record.comparison;
  const ratio = comparison?.figure.shape === "point" ? comparison.figure.value : undefined;
  return {
    record: record.id,
    label: record.label,
    method: record.method,
    unit: record.unit,
    ...(ratio !== undefined ? { ratio } : {}),
    ...(comparison?.ci95 ? { interval: comparison.ci95 } : {}),
    text: formatRecordFigure(record),
  };
}

/** The work's result, or undefined once `signal` aborts (the work is left to end on its own). */
async function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T | undefined> {
  if (signal === undefined) return work;
  if (signal.aborted) {
    work.catch(() => undefined);
    return undefined;
  }
  let stop: (() => void) | undefined;
  const stopped = new Promise<undefined>((resolve) => {
    stop = () => resolve(undefined);
    signal.addEventListener("abort", stop, { once: true });
  });
  work.catch(() => undefined);
  try {
    return await Promise.race([work, stopped]);
  } finally {
    if (stop) signal.removeEventListener("abort", stop);
  }
}

/** Checks --endpoint (and --reference) answer and list a model; one line each of what they serve. */
async function checkEndpoints(options: BringUpOptions): Promise<string[]> {
  const request = options.apiKey !== undefined ? { apiKey: options.apiKey } : {};
  const found = [describeEndpoint(await checkEndpoint(options.endpoint as string, "--endpoint", request))];
  if (options.reference !== undefined)
    found.push(
      `reference ${describeEndpoint(await checkEndpoint(options.reference, "--reference", request))}`,
    );
  return found;
}
