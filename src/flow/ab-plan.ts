// Where each arm of a reference A/B runs in a bring-up, or why it is skipped, at quick-run sizes.
import {
  type AbBenchmark,
  abArmBuild,
  abArmNames,
  type Build,
  conversionKey,
  describeBuild,
  type KvLayout,
  type Reference,
  switchFlags,
} from "../catalog/index.js";
import type { ErrorCode } from "../common/error-catalogue.js";
import type { AbArmServer } from "./ab-stage.js";
import type { BringUpOptions } from "./bring-up-options.js";
import type { ConvertedWeights } from "./convert-stage.js";
import type { EmbeddedServer } from "./embedded-server.js";
import type { Servers } from "./reference-servers.js";

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
export function planAb(
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

/** How an A/B's quick-run sizes differ from the manifest's, as a series suffix. */
export function abWorkloadDifferences(declared: AbBenchmark, run: AbBenchmark): string[] {
  return [
    run.prompt_tokens !== declared.prompt_tokens ? `p${run.prompt_tokens}` : "",
    run.output_tokens !== declared.output_tokens ? `o${run.output_tokens}` : "",
    run.blocks !== declared.blocks ? `b${run.blocks}` : "",
  ].filter((part) => part !== "");
}

/** The A/B with the quick-run sizes applied. */
export function sized(spec: AbBenchmark, size: BringUpOptions["benchmarkSize"]): AbBenchmark {
  return {
    ...spec,
    prompt_tokens: size?.promptTokens ?? spec.prompt_tokens,
    output_tokens: size?.outputTokens ?? spec.output_tokens,
    blocks: size?.blocks ?? spec.blocks,
  };
}
