// The embedded servers of a bring-up: the build, the baseline, the gates' own baselines and the
// retrieval variant, started on one KV budget.
import { type Build, buildKey, conversionKey, describeBuild, type Reference } from "../catalog/index.js";
import { kvBytesPerSequence, type LoadedModel, planKvCache } from "../engine/index.js";
import type { BringUpOptions } from "./bring-up-options.js";
import { EmbeddedServer } from "./embedded-server.js";
import { gateBaseline, ownBuild } from "./reference-builds.js";
import { sweepSize } from "./sweep-stage.js";

/** Tokens per KV block on the embedded servers (the engine's default). */
export const EMBEDDED_BLOCK_SIZE = 16;
/** Requests in flight the embedded build and baseline accept at least (gates send one at a time). */
const EMBEDDED_MAX_NUM_SEQS = 4;

export interface Servers {
  build?: EmbeddedServer;
  baseline?: EmbeddedServer;
  retrieval?: EmbeddedServer;
  /** Builds that single gates compare against (their own `baseline`), by buildKey. */
  gateBaselines: Map<string, EmbeddedServer>;
}

/**
 * The build (reference.kv_layout) and the baseline (reference.baseline) on one KV byte budget, room
 * for the longest A/B's requests at max_model_len in the full layout, so their capacities compare;
 * the retrieval variant sized for the longest needle context.
 */
export async function startServers(
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
  // A batch-invariance gate's decodes all run at once on the build.
  const concurrent = Math.max(
    0,
    ...reference.gates.map((g) => (g.kind === "bit-identical-decode" ? (g.concurrent ?? 0) : 0)),
  );
  // The sweep's highest concurrency runs all at once on the build and on the baseline.
  const sweeping = Math.max(0, ...(sweepSize(options.sweep)?.concurrencies ?? []));
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
    maxNumSeqs: Math.max(EMBEDDED_MAX_NUM_SEQS, requests, concurrent, sweeping),
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
        ...(build.max_num_batched_tokens !== undefined
          ? { maxNumBatchedTokens: build.max_num_batched_tokens }
          : {}),
        ...(build.speculative_tokens !== undefined ? { speculativeTokens: build.speculative_tokens } : {}),
      },
      build.kv_layout,
    );
  const buildSpec = ownBuild(reference);
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
