import type { Gate as GateSpec, KvLayout } from "../catalog/index.js";
import { ProbedEndpoint, type RequestOptions } from "../client/index.js";
import { type GateContext, type GateOutcome, gateRecord, runGateSession } from "../gates/index.js";
import {
  appendRecord,
  type BenchRecord,
  type BenchRecordInput,
  type Fingerprint,
  localServerFingerprint,
} from "../records/index.js";
import { nextSeriesId, recordIds } from "./record-ids.js";

/** A server a gate runs against: its URL, the name its arm gets in the record, its KV layout when known. */
export interface GateServer {
  readonly url: string;
  readonly name: string;
  readonly layout?: KvLayout;
  /** An embedded server's weights checksum. */
  readonly weightsChecksum?: string;
  /** An embedded server's step size when it is not the engine's default. */
  readonly maxNumBatchedTokens?: number;
  /** The tokens an embedded server drafts per step, when it drafts. */
  readonly speculativeTokens?: number;
}

export interface ReferenceGateRun {
  readonly spec: GateSpec;
  /** The record series the gate's record joins (see referenceSeries in the catalog). */
  readonly series: string;
  /** The server the gate measures (absent for a gate over checkpoints). */
  readonly endpoint?: GateServer;
  /** The build compared against, for gates that compare. */
  readonly reference?: GateServer;
  /** The weights gate's checkpoints: a source and its conversion, each with the name its record gives it. */
  readonly checkpoints?: {
    readonly source: { readonly dir: string; readonly name: string };
    readonly converted: { readonly dir: string; readonly name: string };
  };
}

export interface GateStageContext {
  readonly port: string;
  readonly resultsDir: string;
  /** The published store, whose ids a new record must not take either. */
  readonly publishedDir?: string;
  /** The command line the records name. */
  readonly command: string;
  readonly corpus: string;
  readonly needleContexts?: readonly number[];
  /** KV capacity: the build's ratio over the baseline's by construction, when both are embedded. */
  readonly theoreticalRatio?: number;
  readonly request: RequestOptions;
}

/** The gate kinds that measure the build against another one (the baseline, or --reference). */
export function gateCompares(spec: GateSpec): boolean {
  return (
    spec.kind === "perplexity" ||
    spec.kind === "kv-capacity" ||
    (spec.kind === "bit-identical-decode" && spec.compare === "two-builds")
  );
}

/**
 * Runs one reference gate in its own session (probing its servers) and appends its record to the
 * port's results as soon as it is measured, in the gate's series, arms named by build.
 */
export async function runReferenceGate(
  run: ReferenceGateRun,
  stage: GateStageContext,
  ordinal: number,
): Promise<{ outcome: GateOutcome; record?: BenchRecord }> {
  const { spec, checkpoints } = run;
  const { context, outcomes } = await runGateSession([spec], {
    ...(run.endpoint !== undefined ? { endpointUrl: run.endpoint.url } : {}),
    ...(run.reference !== undefined ? { referenceUrl: run.reference.url } : {}),
    ...(checkpoints !== undefined
      ? { sourceCheckpoint: checkpoints.source.dir, convertedCheckpoint: checkpoints.converted.dir }
      : {}),
    request: stage.request,
    corpus: stage.corpus,
    ...(spec.kind === "needles" && stage.needleContexts !== undefined
      ? { needleContexts: stage.needleContexts }
      : {}),
    ...(spec.kind === "kv-capacity" && stage.theoreticalRatio !== undefined
      ? { theoreticalRatio: stage.theoreticalRatio }
      : {}),
  });
  const outcome = outcomes[0] as GateOutcome;
  const described: GateContext = {
    ...context,
    ...(context.endpoint ? { endpoint: withLayout(context.endpoint, run.endpoint) } : {}),
    ...(context.reference ? { reference: withLayout(context.reference, run.reference) } : {}),
  };
  const input = gateRecord(stage.port, spec, outcome, described, new Date(), ordinal);
  if (input === undefined) return { outcome };
  // Arms by what they are, not by where this run put them (URLs, temporary directories).
  const names = new Map<string, string>();
  for (const named of [run.endpoint, run.reference]) if (named) names.set(named.url, named.name);
  if (checkpoints !== undefined) names.set(checkpoints.converted.dir, checkpoints.converted.name);
  const stated = statedFigures(outcome);
  const record = await appendRecord(stage.resultsDir, {
    ...input,
    id: nextSeriesId(run.series, await recordIds(stage.resultsDir, stage.publishedDir)),
    source: { kind: "measured", tool: "bringup up", command: stage.command },
    arms: input.arms.map((arm, index) => ({
      ...arm,
      name: names.get(arm.name) ?? arm.name,
      ...(stated.arms[index] ? { figure: stated.arms[index] } : {}),
    })),
    ...(stated.comparison ? { comparison: stated.comparison } : {}),
  });
  return { outcome, record };
}

type Figure = NonNullable<BenchRecordInput["arms"][number]["figure"]>;

/**
 * What each arm's samples add up to, as the gate computed it (the perplexity over every window, the
 * needles retrieved out of those asked, the capacities and their ratio), so the page shows the
 * gate's own figure rather than a median of its samples.
 */
function statedFigures(outcome: GateOutcome): {
  arms: (Figure | undefined)[];
  comparison?: BenchRecordInput["comparison"];
} {
  const m = outcome.measured ?? {};
  const num = (key: string) => (typeof m[key] === "number" ? (m[key] as number) : undefined);
  switch (outcome.kind) {
    case "perplexity": {
      const point = (value: number | undefined): Figure | undefined =>
        value === undefined ? undefined : { shape: "point", value: Number(value.toFixed(4)), decimals: 4 };
      return { arms: [point(num("perplexity")), point(num("reference"))] };
    }
    case "needles": {
      const passed = num("retrieved");
      const total = num("asked");
      return {
        arms: [passed !== undefined && total ? { shape: "fraction", passed, total } : undefined],
      };
    }
    case "kv-capacity": {
      const capacity = num("capacity");
      const full = num("full_attention_capacity");
      const ratio = num("ratio");
      return {
        arms: [
          capacity === undefined ? undefined : { shape: "point", value: capacity },
          full === undefined ? undefined : { shape: "point", value: full },
        ],
        ...(ratio !== undefined
          ? {
              comparison: {
                figure: { shape: "point", value: Number(ratio.toPrecision(4)) },
                better: "higher",
              },
            }
          : {}),
      };
    }
    default:
      return { arms: [] };
  }
}

/** The probe of an embedded server (one with a layout) with what bringup knows of it in its fingerprint. */
function withLayout(probed: ProbedEndpoint, server: GateServer | undefined): ProbedEndpoint {
  if (server?.layout === undefined) return probed;
  return new ProbedEndpoint(probed.endpoint, {
    ...probed.probe,
    fingerprint: embeddedFingerprint(
      probed.probe.fingerprint,
      server.layout,
      server.weightsChecksum,
      [],
      server.maxNumBatchedTokens,
      server.speculativeTokens,
    ),
  });
}

/**
 * The fingerprint of an embedded server: the KV layout, the switches and a step size other than
 * the default among its flags (so two builds never look alike), this machine and runtime, and its
 * weights' checksum.
 */
export function embeddedFingerprint(
  fingerprint: Fingerprint,
  layout: KvLayout,
  weightsChecksum: string | undefined,
  switches: readonly string[] = [],
  maxNumBatchedTokens?: number,
  speculativeTokens?: number,
): Fingerprint {
  return localServerFingerprint({
    ...fingerprint,
    server_flags: [
      ...(fingerprint.server_flags ?? []),
      `--kv-layout=${layout}`,
      ...switches.map((flag) => `--switch=${flag}`),
      ...(maxNumBatchedTokens !== undefined ? [`--max-num-batched-tokens=${maxNumBatchedTokens}`] : []),
      ...(speculativeTokens !== undefined ? [`--speculative-tokens=${speculativeTokens}`] : []),
    ],
    ...(weightsChecksum !== undefined ? { weights_checksum: weightsChecksum } : {}),
  });
}
