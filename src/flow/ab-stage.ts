import {
  type AbResult,
  type ArmKey,
  randomWorkload,
  runAb,
  type Target,
  type TokenRange,
  type Trial,
  trialMetric,
} from "../bench/index.js";
import type { AbBenchmark, KvLayout } from "../catalog/index.js";
import { probeEndpoint } from "../client/index.js";
import type { Fingerprint } from "../records/index.js";
import { embeddedFingerprint } from "./gate-stage.js";

/** Where an arm of an A/B runs: its URL, what the record calls it, and its build. */
export interface AbArmServer {
  readonly url: string;
  /** What the arm's build has that the other's lacks (see abArmNames in the catalog). */
  readonly name: string;
  readonly layout: KvLayout;
  /** The embedded build's switches as `name=value` (an outside server's are its own). */
  readonly switches?: readonly string[];
  /** True for the embedded server, whose fingerprint then names the build it was started as. */
  readonly embedded: boolean;
  /** The embedded server's weights checksum. */
  readonly weightsChecksum?: string;
}

export interface AbStageOptions {
  readonly port: string;
  readonly resultsDir: string;
  readonly command: string;
  /** The record id of the A/B (a new id of the benchmark's series). */
  readonly id: string;
  readonly arms: Record<ArmKey, AbArmServer>;
  /** Restarts the one embedded server as an arm (same-pod-ab); absent when both arms are live. */
  readonly switchTo?: (arm: ArmKey) => Promise<void>;
  /** The model id to send (default: the endpoint's own). */
  readonly model?: string;
  readonly apiKey?: string;
  /** Token ids the seeded prompts are drawn from; inside the model's vocabulary. */
  readonly tokens?: TokenRange;
  /** Seconds a request may go without a byte, and in all (long prompts prefill slowly on a CPU). */
  readonly stallTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly signal?: AbortSignal;
  readonly onTrial?: (trial: Trial, done: number, total: number) => void;
}

/** The seed of every A/B workload: the same prompts on every run, so runs compare. */
export const AB_WORKLOAD_SEED = 0;

/**
 * One A/B of the reference section: a seeded workload of `prompt_tokens`-token prompts that each
 * generate exactly `output_tokens`, interleaved in ABBA blocks; trials and the A/B record are
 * appended to the port's results as they are measured.
 */
export async function runReferenceAb(spec: AbBenchmark, options: AbStageOptions): Promise<AbResult> {
  const metric = trialMetric(spec.metric);
  // Each arm is identified while it is the one serving; b first, so the server ends as arm a,
  // where the ABBA order starts (the build usually serves b already: no restart is wasted).
  const identify = async (arm: ArmKey) => {
    await options.switchTo?.(arm);
    return armTarget(options.arms[arm], options);
  };
  const b = await identify("b");
  const a = await identify("a");
  const workload = randomWorkload({
    numPrompts: spec.requests,
    inputLen: spec.prompt_tokens,
    outputLen: spec.output_tokens,
    seed: AB_WORKLOAD_SEED,
    ...(options.tokens ? { tokens: options.tokens } : {}),
  });
  const total = spec.blocks * 4;
  let done = 0;
  return runAb({
    a: { name: options.arms.a.name, ...a },
    b: { name: options.arms.b.name, ...b },
    workload,
    blocks: spec.blocks,
    metric: metric.name,
    seed: AB_WORKLOAD_SEED,
    stallTimeoutMs: options.stallTimeoutMs,
    requestTimeoutMs: options.requestTimeoutMs,
    ...(options.switchTo ? { switchTo: options.switchTo } : {}),
    records: { dir: options.resultsDir, port: options.port, command: options.command },
    runId: options.id.slice(options.port.length + 1),
    ...(options.signal ? { signal: options.signal } : {}),
    onTrial: (trial) => options.onTrial?.(trial, ++done, total),
  });
}

async function armTarget(
  server: AbArmServer,
  options: AbStageOptions,
): Promise<{ target: Target; fingerprint: Fingerprint }> {
  const { probe } = await probeEndpoint(server.url, options.apiKey ? { apiKey: options.apiKey } : {});
  const model = options.model ?? probe.model;
  const probed: Fingerprint = { ...probe.fingerprint, software: { ...probe.fingerprint.software, model } };
  // An embedded server's layout is a flag it was started with; an outside server's flags are its own.
  const fingerprint = server.embedded
    ? embeddedFingerprint(probed, server.layout, server.weightsChecksum, server.switches)
    : probed;
  return {
    target: {
      url: probe.url,
      model,
      endpointType: "completions",
      ignoreEos: true,
      ...(options.apiKey ? { apiKey: options.apiKey } : {}),
    },
    fingerprint,
  };
}
