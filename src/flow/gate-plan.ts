// Which server each reference gate runs against in a bring-up, or why it cannot run, and how its
// outcome reads in the summary.
import {
  type Build,
  buildKey,
  conversionKey,
  describeBuild,
  describeConversion,
  type Gate as GateSpec,
  type Reference,
} from "../catalog/index.js";
import type { ErrorCode } from "../common/error-catalogue.js";
import { kvCapacityRatio, kvFloatsPerToken, type LoadedModel } from "../engine/index.js";
import type { GateOutcome } from "../gates/index.js";
import type { BenchRecord } from "../records/index.js";
import type { BringUpOptions } from "./bring-up-options.js";
import type { ConvertedWeights } from "./convert-stage.js";
import { DEFAULT_PORT } from "./default-port.js";
import type { EmbeddedServer } from "./embedded-server.js";
import { type GateServer, gateCompares, type ReferenceGateRun } from "./gate-stage.js";
import { gateBaseline } from "./reference-builds.js";
import { EMBEDDED_BLOCK_SIZE, type Servers } from "./reference-servers.js";
import type { GateSummary } from "./summary.js";

/**
 * What the embedded build and the gate's baseline give by construction at the served context, from
 * the layers' states the architecture reads off the config (the model is not consulted): for a
 * gate whose own baseline sets switches in the build's layout, the ratio of the KV values per token
 * under each; otherwise the layouts' ratio.
 */
export function kvCapacityTheory(
  spec: GateSpec,
  reference: Reference,
  model: LoadedModel,
): number | undefined {
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

type GatePlan =
  | Pick<ReferenceGateRun, "endpoint" | "reference" | "checkpoints">
  | { notRun: { code: ErrorCode; summary: string } };

/** Which servers (or checkpoints) a gate runs against, or why it cannot run in this bring-up. */
export function planGate(
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

export function embedded(server: EmbeddedServer, name: string): GateServer {
  return {
    url: server.url,
    name,
    layout: server.layout,
    ...(server.weightsChecksum !== undefined ? { weightsChecksum: server.weightsChecksum } : {}),
    ...(server.maxNumBatchedTokens !== undefined ? { maxNumBatchedTokens: server.maxNumBatchedTokens } : {}),
    ...(server.speculativeTokens !== undefined ? { speculativeTokens: server.speculativeTokens } : {}),
  };
}

/** How a needle gate's quick-run contexts differ from the manifest's, as a series suffix. */
export function gateWorkloadDifferences(
  spec: GateSpec,
  needleContexts: readonly number[] | undefined,
): string[] {
  if (spec.kind !== "needles" || needleContexts === undefined) return [];
  const same =
    needleContexts.length === spec.contexts.length && needleContexts.every((n, i) => n === spec.contexts[i]);
  return same ? [] : [`ctx${needleContexts.join("-")}`];
}

export function notRun(spec: GateSpec, code: ErrorCode, summary: string): GateSummary {
  return { kind: spec.kind, status: "not-run", code, summary };
}

export function gateSummary(outcome: GateOutcome, record: BenchRecord | undefined): GateSummary {
  return {
    kind: outcome.kind,
    status: outcome.status,
    summary: outcome.summary,
    ...(outcome.code !== undefined ? { code: outcome.code } : {}),
    ...(outcome.value !== undefined ? { value: outcome.value } : {}),
    ...(outcome.unit !== undefined ? { unit: outcome.unit } : {}),
    ...(outcome.label !== undefined ? { label: outcome.label } : {}),
    ...(record ? { record: record.id, method: record.method } : {}),
  };
}
