import { join } from "node:path";
import type { AbResult } from "../bench/index.js";
import {
  type AbBenchmark,
  abArmBuild,
  abArmNames,
  type Build,
  buildKey,
  conversionKey,
  describeBuild,
  describeConversion,
  type Gate as GateSpec,
  type KvLayout,
  type LoadedPort,
  loadCatalog,
  localResultsDir,
  RESULTS_DIR,
  type Reference,
  referenceSeries,
  switchFlags,
  workloadSeries,
} from "../catalog/index.js";
import type { ErrorCode } from "../common/error-catalogue.js";
import { BringupError, isBringupError } from "../common/errors.js";
import {
  type Architecture,
  findArchitecture,
  kvBytesPerSequence,
  kvCapacityRatio,
  kvFloatsPerToken,
  type LoadedModel,
  loadModel,
  planKvCache,
  readCorpus,
} from "../engine/index.js";
import type { GateOutcome } from "../gates/index.js";
import type { BenchRecord } from "../records/index.js";
import { buildSite, formatRecordFigure } from "../site/index.js";
import { type AbArmServer, runReferenceAb } from "./ab-stage.js";
import { checkBuildSwitches, type DeclaredBuild } from "./build-check.js";
import {
  type ConvertedWeights,
  convertReferenceWeights,
  referenceConversions,
  removeConverted,
} from "./convert-stage.js";
import { DEFAULT_PORT } from "./default-port.js";
import { EmbeddedServer } from "./embedded-server.js";
import { type GateServer, gateCompares, type ReferenceGateRun, runReferenceGate } from "./gate-stage.js";
import { cachedModel } from "./model-cache.js";
import { nextSeriesId, recordIds } from "./record-ids.js";
import { StageClock } from "./stage-clock.js";
import type {
  BringUpSummary,
  FigureSummary,
  GateSummary,
  ProgressEvent,
  SkippedBenchmark,
  StageEvent,
} from "./summary.js";
import { cachedTinyModel, REFERENCE_SEED, sha256, weightsParts } from "./tiny-model.js";

export interface BringUpOptions {
  /** The project root holding ports/ (and where the site and the model cache go by default). */
  readonly root: string;
  /** The port to bring up (default: DEFAULT_PORT). */
  readonly port?: string;
  /** Run the gates and A/Bs against this OpenAI-compatible endpoint instead of the embedded server. */
  readonly endpoint?: string;
  /** With `endpoint`: the baseline build (the reference section's `baseline`) for gates that compare and A/B arms. */
  readonly reference?: string;
  /** With `endpoint`: the model id to send (default: the endpoint's own). */
  readonly model?: string;
  readonly apiKey?: string;
  /** Where tiny reference models are cached (default: <root>/.cache/bringup/models). */
  readonly cacheDir?: string;
  /** Needle context lengths to run instead of the manifest's (for quick runs). */
  readonly needleContexts?: readonly number[];
  /** Smaller A/Bs than the manifest's (for quick runs). */
  readonly benchmarkSize?: {
    readonly promptTokens?: number;
    readonly outputTokens?: number;
    readonly blocks?: number;
  };
  /** Build the site at the end (default true); it includes the local records, marked local. */
  readonly site?: boolean;
  /** Where the site is built (default: <root>/site-out, as `bringup site build`). */
  readonly siteDir?: string;
  /** Matmul threads of each embedded engine (default: all cores). */
  readonly threads?: number;
  /** The command line the records name (default: `bringup up <port>`). */
  readonly command?: string;
  /** Stops the run: servers close, what was recorded stays, the summary says `aborted`. */
  readonly signal?: AbortSignal;
  readonly onStage?: (event: StageEvent) => void;
  readonly onProgress?: (event: ProgressEvent) => void;
}

export { REFERENCE_SEED } from "./tiny-model.js";

/** Requests in flight the embedded build and baseline accept (gates send one at a time). */
/** Tokens per KV block on the embedded servers (the engine's default). */
const EMBEDDED_BLOCK_SIZE = 16;
const EMBEDDED_MAX_NUM_SEQS = 4;
/** Long prompts prefill slowly on two cores: requests to the embedded servers may take this long. */
const EMBEDDED_REQUEST_TIMEOUT_MS = 30 * 60_000;
const ENDPOINT_REQUEST_TIMEOUT_MS = 10 * 60_000;

interface Servers {
  build?: EmbeddedServer;
  baseline?: EmbeddedServer;
  retrieval?: EmbeddedServer;
  /** Builds that single gates compare against (their own `baseline`), by buildKey. */
  gateBaselines: Map<string, EmbeddedServer>;
}

/** The build a comparing gate runs against: its own baseline over the reference section's. */
function gateBaseline(spec: GateSpec, reference: Reference): Build | undefined {
  const own = "baseline" in spec ? spec.baseline : undefined;
  if (own === undefined) return reference.baseline;
  return {
    kv_layout: own.kv_layout ?? reference.baseline?.kv_layout ?? reference.kv_layout,
    ...(own.switches !== undefined ? { switches: own.switches } : {}),
    ...(own.weights !== undefined ? { weights: own.weights } : {}),
  };
}

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
  try {
    const { port, reference, portModel } = await clock.run("manifest", async () => {
      const value = await loadPort(options.root, portId, external);
      const ref = value.reference;
      return {
        value,
        detail: `${portId}: ${ref.gates.length} gate${ref.gates.length === 1 ? "" : "s"}, ${ref.benchmarks.length} A/B${ref.benchmarks.length === 1 ? "" : "s"}; ${ref.kv_layout} KV layout${ref.baseline ? ` against ${ref.baseline.kv_layout}` : ""}`,
      };
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
      clock.skip("serve", `--endpoint ${options.endpoint}: no embedded server`);
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
        return { value: undefined, detail: `${passed} of ${gates.length} passed` };
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
              ...(models ? { tokens: { low: 3, high: Math.min(259, models.tiny.config.vocabSize) } } : {}),
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
        return { value: undefined, detail: `${measured} of ${reference.benchmarks.length} measured` };
      });
    }
    await servers.build?.close();

    if (aborted()) clock.skip("site", "stopped before the site");
    else if (options.site === false) clock.skip("site", "--no-site");
    else {
      siteDir = options.siteDir ?? join(options.root, "site-out");
      const out = siteDir;
      page = await clock.run("site", async () => {
        const built = await buildSite(await loadCatalog(options.root, { local: true }), out);
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

/**
 * What the embedded build and the gate's baseline give by construction at the served context, from
 * the layers' states the architecture reads off the config (the model is not consulted): for a
 * gate whose own baseline sets switches in the build's layout, the ratio of the KV values per token
 * under each; otherwise the layouts' ratio.
 */
function kvCapacityTheory(spec: GateSpec, reference: Reference, model: LoadedModel): number | undefined {
  const against = gateBaseline(spec, reference);
  if (spec.kind !== "kv-capacity" || against === undefined) return undefined;
  const states = (switches: Readonly<Record<string, string>> | undefined) =>
    model.architecture.states(model.config, new Map(Object.entries(switches ?? {})));
  const own = states(reference.switches);
  if (spec.baseline?.switches === undefined) {
    return kvCapacityRatio(
      own,
      reference.kv_layout,
      against.kv_layout,
      EMBEDDED_BLOCK_SIZE,
      reference.max_model_len,
    );
  }
  if (against.kv_layout !== reference.kv_layout) return undefined;
  return kvFloatsPerToken(states(spec.baseline.switches)) / kvFloatsPerToken(own);
}

/** The port with its reference section and model code, or a BringupError naming what it lacks. */
async function loadPort(
  root: string,
  portId: string,
  external: boolean,
): Promise<{ port: LoadedPort; reference: Reference; portModel?: Architecture }> {
  const catalog = await loadCatalog(root);
  const port = catalog.ports.find((p) => p.id === portId);
  if (port === undefined) {
    throw new BringupError(
      "PORT_UNKNOWN",
      `there is no port "${portId}"; \`bringup ports list\` names them.`,
      { subject: portId },
    );
  }
  const reference = port.manifest.reference;
  if (reference === undefined) {
    throw new BringupError(
      "PORT_NO_REFERENCE",
      `port ${portId} has no tiny reference config: add a \`reference:\` section to ports/${portId}/port.yaml (a small \`config\` of its architecture, \`max_model_len\`, the \`gates\` and \`benchmarks\` to run; see ports/README.md), then run bringup up ${portId} again.`,
      { subject: portId },
    );
  }
  if (external) return { port, reference };
  const portModel = await findArchitecture(
    reference.config,
    `ports/${portId}/port.yaml reference.config`,
  ).catch((error: unknown) => {
    if (!isBringupError(error)) throw error;
    throw new BringupError(
      "PORT_NO_MODEL_CODE",
      `port ${portId} has no model code for the embedded engine: ${error.message} Or run its gates against a server with --endpoint URL.`,
      { subject: portId, cause: error },
    );
  });
  if (portModel.tinyModel === undefined) {
    throw new BringupError(
      "PORT_NO_MODEL_CODE",
      `port ${portId}'s family makes no tiny reference model from a config: give its Architecture a tinyModel (src/engine/models/), or run its gates against a server with --endpoint URL.`,
      { subject: portId },
    );
  }
  return { port, reference, portModel };
}

/** The tiny reference model (and the retrieval variant when a needle gate asks for it), cached on disk. */
async function makeWeights(
  port: LoadedPort,
  reference: Reference,
  portModel: Architecture,
  corpus: string,
  retrievalGates: readonly { contexts: readonly number[] }[],
  needleContexts: readonly number[] | undefined,
  options: BringUpOptions,
) {
  const cacheDir = modelCacheDir(options);
  // What decides the bytes: the config, the seed, the corpus and the code that turns them into
  // weights (the engine's model families and blocks, and the codecs they build on).
  const code = await weightsParts();
  const corpusHash = sha256(corpus);
  const tiny = await cachedTinyModel(port.id, reference.config, portModel, corpus, cacheDir);
  const made = [`tiny ${tiny.reused ? "reused" : "made"} (${tiny.dir})`];
  const tinyModel = await loadModel(tiny.dir);
  let retrieval: LoadedModel | undefined;
  const longest = Math.max(0, ...retrievalGates.flatMap((g) => needleContexts ?? g.contexts));
  const make = portModel.retrievalModel?.bind(portModel);
  const retrievalOptions = { maxPositionEmbeddings: longest, seed: REFERENCE_SEED, port: port.id };
  const retrievalFiles = longest > 0 ? make?.(reference.config, corpus, retrievalOptions) : undefined;
  if (retrievalFiles !== undefined) {
    const cached = await cachedModel(
      cacheDir,
      `${port.id}/retrieval`,
      { max_position_embeddings: longest, corpus: corpusHash, ...code },
      () => retrievalFiles,
    );
    retrieval = await loadModel(cached.dir);
    made.push(`retrieval variant ${cached.reused ? "reused" : "made"}`);
  }
  return {
    value: { tiny: tinyModel, ...(retrieval ? { retrieval } : {}) },
    detail: made.join("; "),
  };
}

function modelCacheDir(options: BringUpOptions): string {
  return options.cacheDir ?? join(options.root, ".cache", "bringup", "models");
}

/**
 * The build (reference.kv_layout) and the baseline (reference.baseline) on one KV byte budget, room
 * for the longest A/B's requests at max_model_len in the full layout, so their capacities compare;
 * the retrieval variant sized for the longest needle context.
 */
async function startServers(
  portId: string,
  reference: Reference,
  models: {
    tiny: LoadedModel;
    retrieval?: LoadedModel;
    /** Converted checkpoints gates' baselines serve, by conversionKey. */
    converted: ReadonlyMap<string, LoadedModel>;
  },
  servers: Servers,
  options: BringUpOptions,
) {
  const requests = Math.max(1, ...reference.benchmarks.map((b) => b.requests));
  const blockSize = EMBEDDED_BLOCK_SIZE;
  const kvCacheBytes =
    requests *
    kvBytesPerSequence(
      planKvCache(models.tiny.architecture.states(models.tiny.config, new Map()), "full", blockSize).pools,
      reference.max_model_len,
    );
  const common = {
    model: models.tiny,
    servedModelName: `${portId}-tiny`,
    maxModelLen: reference.max_model_len,
    kvCacheBytes,
    blockSize,
    maxNumSeqs: Math.max(EMBEDDED_MAX_NUM_SEQS, requests),
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
  };
  const start = (build: Build) =>
    EmbeddedServer.start(
      {
        ...common,
        ...(build.weights
          ? { model: models.converted.get(conversionKey(build.weights)) as LoadedModel }
          : {}),
        ...(build.switches !== undefined ? { switches: build.switches } : {}),
      },
      build.kv_layout,
    );
  const buildSpec: Build = {
    kv_layout: reference.kv_layout,
    ...(reference.switches !== undefined ? { switches: reference.switches } : {}),
  };
  servers.build = await start(buildSpec);
  const started = [`build (${describeBuild(buildSpec)}) ${servers.build.url}`];
  if (reference.baseline !== undefined) {
    servers.baseline = await start(reference.baseline);
    started.push(`baseline (${describeBuild(reference.baseline)}) ${servers.baseline.url}`);
  }
  for (const gate of reference.gates) {
    if (!("baseline" in gate) || gate.baseline === undefined) continue;
    const build = gateBaseline(gate, reference) as Build;
    const key = buildKey(build);
    if (servers.gateBaselines.has(key)) continue;
    const server = await start(build);
    servers.gateBaselines.set(key, server);
    started.push(`${gate.kind} gate's baseline (${describeBuild(build)}) ${server.url}`);
  }
  if (models.retrieval !== undefined) {
    servers.retrieval = await EmbeddedServer.start(
      {
        model: models.retrieval,
        servedModelName: `${portId}-tiny-retrieval`,
        maxModelLen: models.retrieval.config.maxPositionEmbeddings,
        blockSize,
        maxNumSeqs: 1,
        ...(options.threads !== undefined ? { threads: options.threads } : {}),
      },
      reference.kv_layout,
    );
    started.push(`retrieval variant ${servers.retrieval.url}`);
  }
  return {
    value: undefined,
    detail: `${started.join(", ")}; KV budget ${(kvCacheBytes / 2 ** 20).toFixed(1)} MiB each`,
  };
}

type GatePlan =
  | Pick<ReferenceGateRun, "endpoint" | "reference" | "checkpoints">
  | { notRun: { code: ErrorCode; summary: string } };

/** Which servers (or checkpoints) a gate runs against, or why it cannot run in this bring-up. */
function planGate(
  spec: GateSpec,
  reference: Reference,
  servers: Servers,
  options: BringUpOptions,
  tiny: LoadedModel | undefined,
  converted: ConvertedWeights | undefined,
): GatePlan {
  if (spec.kind === "weights-bit-identity") {
    const model = spec.convert ? converted?.models.get(conversionKey(spec.convert)) : undefined;
    if (spec.convert === undefined || model?.directory === undefined || tiny?.directory === undefined) {
      return {
        notRun: {
          code: "UP_NO_CONVERSION",
          summary: `bringup up converts no weights for this gate${options.endpoint !== undefined ? " on an outside endpoint" : " (give it `convert:` in port.yaml)"}, so there is nothing to compare bit for bit; run \`bringup gate ${options.port ?? DEFAULT_PORT} --only weights-bit-identity --source DIR --converted DIR\`.`,
        },
      };
    }
    return {
      checkpoints: {
        source: { dir: tiny.directory, name: "tiny reference checkpoint" },
        converted: {
          dir: model.directory,
          name: `tiny reference checkpoint ${describeConversion(spec.convert)}`,
        },
      },
    };
  }
  if (options.endpoint !== undefined) {
    const endpoint = { url: options.endpoint, name: options.endpoint };
    if (!gateCompares(spec)) return { endpoint };
    if (options.reference === undefined) {
      return {
        notRun: {
          code: "GATE_NEEDS_REFERENCE",
          summary: `the ${spec.kind} gate compares against a baseline build: pass --reference URL serving the same model with the ${reference.baseline?.kv_layout ?? "baseline"} KV layout (for vllm-gaudi, --disable-hybrid-kv-cache-manager).`,
        },
      };
    }
    return { endpoint, reference: { url: options.reference, name: options.reference } };
  }
  if (spec.kind === "needles" && spec.model === "retrieval") {
    if (servers.retrieval === undefined) {
      return {
        notRun: {
          code: "PORT_NO_RETRIEVAL_MODEL",
          summary: `the needle gate runs on the retrieval variant, which the model family of ${options.port ?? DEFAULT_PORT} does not make (its Architecture's retrievalModel, under src/engine/models/).`,
        },
      };
    }
    return { endpoint: embedded(servers.retrieval, "retrieval variant") };
  }
  const build = servers.build as EmbeddedServer;
  const buildName = describeBuild({
    kv_layout: build.layout,
    ...(reference.switches !== undefined ? { switches: reference.switches } : {}),
  });
  if (!gateCompares(spec)) return { endpoint: embedded(build, buildName) };
  const against = gateBaseline(spec, reference);
  const own = "baseline" in spec && spec.baseline !== undefined;
  const server = own ? servers.gateBaselines.get(buildKey(against as Build)) : servers.baseline;
  if (server === undefined || against === undefined) {
    return {
      notRun: {
        code: "UP_NO_BASELINE",
        summary: `the ${spec.kind} gate compares against a baseline build, and the reference section names none: add \`baseline: { kv_layout: full }\` to it in port.yaml.`,
      },
    };
  }
  return { endpoint: embedded(build, buildName), reference: embedded(server, describeBuild(against)) };
}

function embedded(server: EmbeddedServer, name: string): GateServer {
  return {
    url: server.url,
    name,
    layout: server.layout,
    ...(server.weightsChecksum !== undefined ? { weightsChecksum: server.weightsChecksum } : {}),
  };
}

type AbPlan =
  | {
      arms: Record<"a" | "b", AbArmServer>;
      switchTo?: (arm: "a" | "b") => Promise<void>;
    }
  | { skip: { reason: string; code: ErrorCode } };

/**
 * Where each arm of an A/B runs: the embedded server restarted as each arm's build, or the two
 * outside endpoints (which serve the reference's and the baseline's layouts, their switches their own).
 */
function planAb(
  spec: AbBenchmark,
  reference: Reference,
  servers: Servers,
  options: BringUpOptions,
  converted: ConvertedWeights | undefined,
): AbPlan {
  const length = spec.prompt_tokens + spec.output_tokens;
  const names = abArmNames(spec, reference);
  const builds = { a: abArmBuild(spec.a, reference), b: abArmBuild(spec.b, reference) };
  if (options.endpoint === undefined) {
    const server = servers.build as EmbeddedServer;
    if (length > reference.max_model_len) {
      return {
        skip: {
          code: "UP_AB_TOO_LONG",
          reason: `prompt_tokens + output_tokens is ${length}, beyond the reference max_model_len ${reference.max_model_len}; shorten the A/B or raise max_model_len.`,
        },
      };
    }
    const arm = (key: "a" | "b"): AbArmServer => ({
      url: server.url,
      name: names[key],
      layout: builds[key].kv_layout,
      switches: switchFlags(builds[key]),
      embedded: true,
      // Read once the server serves this arm (after switchTo), so an arm of converted weights
      // names their checksum.
      get weightsChecksum() {
        return server.weightsChecksum;
      },
    });
    const weightsOf = (build: Build) =>
      build.weights === undefined ? undefined : converted?.models.get(conversionKey(build.weights));
    return {
      arms: { a: arm("a"), b: arm("b") },
      switchTo: (key) =>
        server.restartAs(builds[key].kv_layout, builds[key].switches, weightsOf(builds[key])),
    };
  }
  const setsWeights = (["a", "b"] as const).find((key) => spec[key].weights !== undefined);
  if (setsWeights !== undefined) {
    return {
      skip: {
        code: "UP_AB_WEIGHTS_EXTERNAL",
        reason: `arm ${setsWeights} serves converted weights (${describeBuild(builds[setsWeights])}), which an outside server loads for itself; serve each checkpoint and measure them with \`bringup bench ab --switch\`.`,
      },
    };
  }
  const setsSwitches = (["a", "b"] as const).find((key) => spec[key].switches !== undefined);
  if (setsSwitches !== undefined) {
    const flags = Object.entries(spec[setsSwitches].switches ?? {}).map(
      ([name, value]) => `${name}=${value}`,
    );
    return {
      skip: {
        code: "UP_AB_SWITCHES_EXTERNAL",
        reason: `arm ${setsSwitches} sets switches (${flags.join(", ")}), which an outside server decides for itself; serve each build and measure them with \`bringup bench ab --switch\`.`,
      },
    };
  }
  const urlOf = (layout: KvLayout): string | undefined =>
    layout === reference.kv_layout
      ? options.endpoint
      : layout === reference.baseline?.kv_layout
        ? options.reference
        : undefined;
  const a = urlOf(builds.a.kv_layout);
  const b = urlOf(builds.b.kv_layout);
  if (a === undefined || b === undefined) {
    const missing = a === undefined ? builds.a.kv_layout : builds.b.kv_layout;
    return {
      skip: {
        code: "UP_AB_ARM_MISSING",
        reason: `no endpoint serves the ${missing} KV layout: --endpoint serves ${reference.kv_layout}; pass --reference URL serving ${reference.baseline?.kv_layout ?? missing}.`,
      },
    };
  }
  const hosts = [new URL(a).hostname, new URL(b).hostname];
  if (hosts[0] !== hosts[1]) {
    return {
      skip: {
        code: "UP_AB_HOSTS_DIFFER",
        reason: `the arms are on two hosts (${hosts.join(", ")}), and an A/B of two live servers must share a node (same-node-ab); serve both on one node, or measure it same-pod with \`bringup bench ab --switch\`.`,
      },
    };
  }
  return {
    arms: {
      a: { url: a, name: names.a, layout: builds.a.kv_layout, embedded: false },
      b: { url: b, name: names.b, layout: builds.b.kv_layout, embedded: false },
    },
  };
}

/** Every build the reference section serves, with where port.yaml declares it. */
function declaredBuilds(reference: Reference): DeclaredBuild[] {
  const own: Build = {
    kv_layout: reference.kv_layout,
    ...(reference.switches !== undefined ? { switches: reference.switches } : {}),
  };
  return [
    { where: "reference", build: own },
    ...(reference.baseline !== undefined ? [{ where: "reference.baseline", build: reference.baseline }] : []),
    ...reference.gates.flatMap((gate, index) => {
      const build =
        "baseline" in gate && gate.baseline !== undefined ? gateBaseline(gate, reference) : undefined;
      return build === undefined ? [] : [{ where: `reference.gates[${index}].baseline`, build }];
    }),
    ...reference.benchmarks.flatMap((spec, index) =>
      (["a", "b"] as const).map((key) => ({
        where: `reference.benchmarks[${index}].${key}`,
        build: abArmBuild(spec[key], reference),
      })),
    ),
  ];
}

/** How a needle gate's quick-run contexts differ from the manifest's, as a series suffix. */
function gateWorkloadDifferences(spec: GateSpec, needleContexts: readonly number[] | undefined): string[] {
  if (spec.kind !== "needles" || needleContexts === undefined) return [];
  const same =
    needleContexts.length === spec.contexts.length && needleContexts.every((n, i) => n === spec.contexts[i]);
  return same ? [] : [`ctx${needleContexts.join("-")}`];
}

/** How an A/B's quick-run sizes differ from the manifest's, as a series suffix. */
function abWorkloadDifferences(declared: AbBenchmark, run: AbBenchmark): string[] {
  return [
    run.prompt_tokens !== declared.prompt_tokens ? `p${run.prompt_tokens}` : "",
    run.output_tokens !== declared.output_tokens ? `o${run.output_tokens}` : "",
    run.blocks !== declared.blocks ? `b${run.blocks}` : "",
  ].filter((part) => part !== "");
}

/** The A/B with the quick-run sizes applied. */
function sized(spec: AbBenchmark, size: BringUpOptions["benchmarkSize"]): AbBenchmark {
  return {
    ...spec,
    prompt_tokens: size?.promptTokens ?? spec.prompt_tokens,
    output_tokens: size?.outputTokens ?? spec.output_tokens,
    blocks: size?.blocks ?? spec.blocks,
  };
}

function notRun(spec: GateSpec, code: ErrorCode, summary: string): GateSummary {
  return { kind: spec.kind, status: "not-run", code, summary };
}

function gateSummary(outcome: GateOutcome, record: BenchRecord | undefined): GateSummary {
  return {
    kind: outcome.kind,
    status: outcome.status,
    summary: outcome.summary,
    ...(outcome.code !== undefined ? { code: outcome.code } : {}),
    ...(outcome.value !== undefined ? { value: outcome.value } : {}),
    ...(outcome.unit !== undefined ? { unit: outcome.unit } : {}),
    ...(record ? { record: record.id, method: record.method } : {}),
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
