import { constants } from "node:fs";
import { access, mkdir } from "node:fs/promises";
import { join } from "node:path";
import {
  type DeviceLogprobsGate,
  type LoadedPort,
  loadCatalog,
  localResultsDir,
  RESULTS_DIR,
} from "../catalog/index.js";
import { BringupError } from "../common/errors.js";
import { findArchitecture, readCorpus } from "../engine/index.js";
import { type GateContext, type GateOutcome, gateRecord, runGateSession } from "../gates/index.js";
import { appendRecord, type BenchRecord } from "../records/index.js";
import { startServer } from "../server/index.js";
import { startDeviceServer } from "./device-server.js";
import { nextSeriesId, recordIds } from "./record-ids.js";
import { cachedTinyModel } from "./tiny-model.js";

export interface DeviceCheckOptions {
  readonly root: string;
  readonly portId: string;
  /** The Python of the venv with the pinned vLLM and the plugin (scripts: device-plugin/scripts/setup-venv.sh). */
  readonly python?: string;
  readonly cacheDir?: string;
  /** Append the gate's record to the port's local results (default true). */
  readonly record?: boolean;
  /** Serve a deliberately wrong plugin (BRINGUP_VLLM_FAULT), to see the gate fail. */
  readonly fault?: string;
  readonly signal?: AbortSignal;
  /** Progress lines (what is starting); the caller decides where they go. */
  readonly onProgress?: (line: string) => void;
}

export interface DeviceCheckResult {
  readonly port: string;
  readonly modelDir: string;
  readonly outcome: GateOutcome;
  readonly record?: BenchRecord;
  readonly vllmLog: string;
}

/** The venv `device-plugin/scripts/setup-venv.sh` makes. */
export function defaultDevicePython(root: string): string {
  return join(root, ".cache", "device-venv", "bin", "python");
}

/** `python`, or the venv's, once it is there to run; DEVICE_VENV_MISSING says how to make it. */
export async function devicePython(root: string, python = defaultDevicePython(root)): Promise<string> {
  try {
    await access(python, constants.X_OK);
  } catch {
    throw new BringupError(
      "DEVICE_VENV_MISSING",
      `there is no Python at ${python} to run vLLM with: run device-plugin/scripts/setup-venv.sh (it makes .cache/device-venv), or pass --python PATH.`,
      { subject: python },
    );
  }
  return python;
}

/**
 * A port's device model code (the bringup-vllm plugin) served by real vLLM on the CPU over the
 * port's tiny checkpoint, gated against the reference engine serving the same directory: its
 * manifest's `reference.device_check` (a device-logprobs gate), recorded like every gate.
 */
export async function deviceCheck(options: DeviceCheckOptions): Promise<DeviceCheckResult> {
  const catalog = await loadCatalog(options.root);
  const port = catalog.ports.find((p) => p.id === options.portId);
  const spec = port?.manifest.reference?.device_check;
  if (port === undefined || spec === undefined) {
    throw new BringupError(
      "PORT_NO_DEVICE_CHECK",
      `port ${options.portId} has no device check: it needs a \`reference.device_check\` in its port.yaml, or a \`reference.device_blocks\` where vLLM cannot serve it (\`bringup ports list\` names the ports).`,
      { subject: options.portId },
    );
  }
  const python = await devicePython(options.root, options.python);
  const reference = port.manifest.reference as NonNullable<LoadedPort["manifest"]["reference"]>;
  const progress = options.onProgress ?? (() => {});
  const corpus = await readCorpus();
  const cacheDir = options.cacheDir ?? join(options.root, ".cache", "bringup", "models");
  const family = await findArchitecture(reference.config, `ports/${port.id}/port.yaml reference.config`);
  const tiny = await cachedTinyModel(port.id, reference.config, family, corpus, cacheDir);
  progress(`tiny checkpoint ${tiny.reused ? "reused" : "made"}: ${tiny.dir}`);
  const logDir = join(options.root, ".cache", "device-logs");
  await mkdir(logDir, { recursive: true });
  const vllmLog = join(logDir, `${port.id}${options.fault ? `-fault-${options.fault}` : ""}.log`);
  // Both serve the same directory under the port's name, at the port's context; the engine as
  // the port's build (its reference switches, e.g. glm-5-mxfp4's FP8 indexer scores), which the
  // device code reproduces.
  const engine = await startServer({
    modelDir: tiny.dir,
    servedModelName: port.id,
    maxModelLen: reference.max_model_len,
    port: 0,
    ...(reference.switches !== undefined ? { switches: reference.switches } : {}),
  });
  try {
    progress(`reference engine at ${engine.url}; starting vLLM (log ${vllmLog})`);
    const device = await startDeviceServer({
      python,
      modelDir: tiny.dir,
      servedModelName: port.id,
      maxModelLen: reference.max_model_len,
      logFile: vllmLog,
      ...(spec.hf_overrides !== undefined ? { hfOverrides: spec.hf_overrides } : {}),
      env: { ...spec.env, ...(options.fault !== undefined ? { BRINGUP_VLLM_FAULT: options.fault } : {}) },
      ...(options.signal !== undefined ? { signal: options.signal } : {}),
    });
    try {
      progress(`vLLM with the plugin at ${device.url}; running the device-logprobs gate`);
      const { context, outcomes } = await runGateSession([spec], {
        endpointUrl: device.url,
        referenceUrl: engine.url,
        corpus,
      });
      const outcome = outcomes[0] as GateOutcome;
      const record =
        options.record === false
          ? undefined
          : await recordCheck(options.root, port.id, spec, outcome, context);
      return { port: port.id, modelDir: tiny.dir, outcome, vllmLog, ...(record ? { record } : {}) };
    } finally {
      await device.stop();
    }
  } finally {
    await engine.close();
  }
}

/**
 * The gate's record in the port's local results, as the next run of the manifest's series
 * (`<port>/device-logprobs`, then `.2`, ...), its arm named for what it served rather than where.
 */
async function recordCheck(
  root: string,
  portId: string,
  spec: typeof DeviceLogprobsGate._output,
  outcome: GateOutcome,
  context: GateContext,
): Promise<BenchRecord | undefined> {
  const input = gateRecord(portId, spec, outcome, context);
  if (input === undefined) return undefined;
  const local = localResultsDir(root, portId);
  const published = join(root, "ports", portId, RESULTS_DIR);
  return appendRecord(local, {
    ...input,
    id: nextSeriesId(spec.record as string, await recordIds(local, published)),
    source: { kind: "measured", tool: "bringup device check", command: `bringup device check ${portId}` },
    arms: input.arms.map((arm) => ({
      ...arm,
      name: spec.device,
      figure: { shape: "point", value: Number((outcome.value as number).toPrecision(3)) },
    })),
  });
}
