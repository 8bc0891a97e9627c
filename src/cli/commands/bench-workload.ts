/** The workload flags `bringup bench run` and `ab` share, and what they build: the workload, the target, the percentiles. */

import { type Command, Option } from "commander";
import {
  datasetWorkload,
  PERCENTILE_METRICS,
  randomWorkload,
  type Slos,
  sharedPrefixWorkload,
  type Target,
  type Workload,
} from "../../bench/index.js";
import { checkEndpoint, probeEndpoint } from "../../client/index.js";
import { BringupError } from "../../common/errors.js";
import type { Fingerprint } from "../../records/index.js";

export function positiveInt(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) {
      throw new BringupError("CLI_INVALID_NUMBER", `${name} takes a positive whole number, got "${value}".`);
    }
    return n;
  };
}

export function nonNegativeInt(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) {
      throw new BringupError("CLI_INVALID_NUMBER", `${name} takes a whole number, got "${value}".`);
    }
    return n;
  };
}

export function positiveNumber(name: string) {
  return (value: string): number => {
    const n = value === "inf" ? Number.POSITIVE_INFINITY : Number(value);
    if (!(n > 0))
      throw new BringupError("CLI_INVALID_NUMBER", `${name} takes a number above 0, got "${value}".`);
    return n;
  };
}

/** A comma list (a sweep when it has several values). */
export function list<T>(parse: (value: string) => T) {
  return (value: string): T[] => value.split(",").map((item) => parse(item.trim()));
}

/** vLLM's --goodput: "ttft:200 tpot:50" (ms). */
export function slos(values: string[]): Slos {
  const result: Slos = {};
  for (const item of values) {
    const [key, raw] = item.split(":");
    const ms = Number(raw);
    if ((key !== "ttft" && key !== "tpot" && key !== "e2el") || !(ms > 0)) {
      throw new BringupError(
        "CLI_INVALID_GOODPUT",
        `--goodput takes KEY:MS pairs with KEY one of ttft, tpot, e2el, got "${item}".`,
      );
    }
    result[key] = ms;
  }
  return result;
}

export interface WorkloadFlags {
  model?: string;
  endpointType: "completions" | "chat";
  apiKey?: string;
  datasetName: "random" | "shared-prefix" | "file";
  datasetPath?: string;
  numPrompts: number;
  randomInputLen: number;
  randomOutputLen: number;
  prefixLen: number;
  randomTokenLow: number;
  randomTokenHigh: number;
  seed: number;
  burstiness: number;
  numWarmups: number;
  ignoreEos?: boolean;
  percentileMetrics: string;
  metricPercentiles: string;
  goodput?: string[];
  stallTimeout: number;
  requestTimeout: number;
  portId?: string;
  reportDir?: string;
  json?: boolean;
  progress: boolean;
}

/** The flags a run and an A/B share; names follow vLLM's `bench serve` where the concept is the same. */
export function workloadOptions(command: Command): Command {
  return command
    .option("--model <id>", "model id to send (default: the first of the endpoint's /v1/models)")
    .addOption(
      new Option("--endpoint-type <type>", "OpenAI route to measure")
        .choices(["completions", "chat"])
        .default("completions"),
    )
    .option("--api-key <key>", "bearer token for the endpoint (default: $OPENAI_API_KEY)")
    .addOption(
      new Option("--dataset-name <name>", "workload: random token ids, shared prefix, or a JSONL file")
        .choices(["random", "shared-prefix", "file"])
        .default("random"),
    )
    .option("--dataset-path <file>", 'JSONL file, one {"prompt": text or ids, "output_len"?: n} per line')
    .option("--num-prompts <n>", "requests per run (per trial in an A/B)", positiveInt("--num-prompts"), 100)
    .option(
      "--random-input-len <n>",
      "prompt tokens (random); suffix tokens (shared-prefix)",
      positiveInt("--random-input-len"),
      128,
    )
    .option("--random-output-len <n>", "tokens to generate", positiveInt("--random-output-len"), 128)
    .option("--prefix-len <n>", "shared prefix tokens (shared-prefix)", positiveInt("--prefix-len"), 256)
    .option(
      "--random-token-low <id>",
      "lowest token id drawn for random prompts",
      nonNegativeInt("--random-token-low"),
      3,
    )
    .option(
      "--random-token-high <id>",
      "token ids drawn stay below this",
      positiveInt("--random-token-high"),
      259,
    )
    .option("--seed <n>", "seed of the workload and the arrivals", nonNegativeInt("--seed"), 0)
    .option(
      "--burstiness <k>",
      "gamma shape of arrivals: 1 Poisson, <1 burstier",
      positiveNumber("--burstiness"),
      1,
    )
    .option(
      "--num-warmups <n>",
      "requests sent first and left out of every figure",
      nonNegativeInt("--num-warmups"),
      0,
    )
    .option("--ignore-eos", "generate exactly the output length (vLLM's ignore_eos)")
    .option(
      "--percentile-metrics <list>",
      "which latencies get percentiles: ttft,tpot,itl,e2el",
      "ttft,tpot,itl",
    )
    .option("--metric-percentiles <list>", "percentiles to report, e.g. 50,90,99", "99")
    .option("--goodput <slo...>", "SLOs for goodput as KEY:MS pairs, e.g. ttft:500 tpot:50")
    .option(
      "--stall-timeout <s>",
      "fail a request that sends nothing for this long",
      positiveNumber("--stall-timeout"),
      60,
    )
    .option(
      "--request-timeout <s>",
      "fail a request that runs longer than this",
      positiveNumber("--request-timeout"),
      600,
    )
    .option(
      "--port-id <id>",
      "append the results to this port's local store (.bringup/results/<id>) as they are measured; `bringup records publish` publishes them",
    )
    .option("--report-dir <dir>", "write a markdown report and SVG charts to this new directory")
    .option("--json", "print a machine-readable report on stdout")
    .option("--no-progress", "no progress bar");
}

export async function buildWorkload(flags: WorkloadFlags): Promise<Workload> {
  const tokens = { low: flags.randomTokenLow, high: flags.randomTokenHigh };
  if (flags.datasetName === "file") {
    if (!flags.datasetPath) {
      throw new BringupError("CLI_DATASET_PATH_MISSING", "--dataset-name file needs --dataset-path FILE.");
    }
    return datasetWorkload({
      path: flags.datasetPath,
      numPrompts: flags.numPrompts,
      outputLen: flags.randomOutputLen,
      seed: flags.seed,
    });
  }
  if (flags.datasetName === "shared-prefix") {
    return sharedPrefixWorkload({
      numPrompts: flags.numPrompts,
      prefixLen: flags.prefixLen,
      suffixLen: flags.randomInputLen,
      outputLen: flags.randomOutputLen,
      seed: flags.seed,
      tokens,
    });
  }
  return randomWorkload({
    numPrompts: flags.numPrompts,
    inputLen: flags.randomInputLen,
    outputLen: flags.randomOutputLen,
    seed: flags.seed,
    tokens,
  });
}

/**
 * Checks the endpoint named by `flag` within seconds, then probes it (src/client): the served model
 * (unless --model names one) and its fingerprint; bench adds the endpoint type it measures to the
 * fingerprint's flags.
 */
export async function resolveTarget(
  url: string,
  flag: string,
  flags: WorkloadFlags,
): Promise<{ target: Target; fingerprint: Fingerprint }> {
  const apiKey = flags.apiKey ?? process.env.OPENAI_API_KEY;
  await checkEndpoint(url, flag, apiKey ? { apiKey } : {});
  const { probe } = await probeEndpoint(url, apiKey ? { apiKey } : {});
  const model = flags.model ?? probe.model;
  const fingerprint: Fingerprint = {
    ...probe.fingerprint,
    software: { ...probe.fingerprint.software, model },
    server_flags: [...(probe.fingerprint.server_flags ?? []), `bench-endpoint-type=${flags.endpointType}`],
  };
  return {
    target: {
      url: probe.url,
      model,
      endpointType: flags.endpointType,
      ...(apiKey ? { apiKey } : {}),
      ...(flags.ignoreEos ? { ignoreEos: true } : {}),
    },
    fingerprint,
  };
}

export function percentilesOf(flags: WorkloadFlags): { metrics: string[]; percentiles: number[] } {
  const metrics = flags.percentileMetrics.split(",").map((m) => m.trim());
  for (const metric of metrics) {
    if (!(PERCENTILE_METRICS as readonly string[]).includes(metric)) {
      throw new BringupError(
        "CLI_INVALID_METRIC",
        `--percentile-metrics takes ${PERCENTILE_METRICS.join(", ")}, got "${metric}".`,
      );
    }
  }
  const percentiles = flags.metricPercentiles.split(",").map((p) => Number(p.trim()));
  return { metrics, percentiles };
}
