import { spawn } from "node:child_process";
import { mkdir, mkdtemp, open, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { loadCatalog, localResultsDir, RESULTS_DIR } from "../catalog/index.js";
import { BringupError } from "../common/errors.js";
import { appendRecord, type BenchRecord } from "../records/index.js";
import { devicePython } from "./device-check.js";
import { nextSeriesId, recordIds } from "./record-ids.js";

export interface DeviceBlocksCheckOptions {
  readonly root: string;
  readonly portId: string;
  /** The Python of the venv with the plugin (default .cache/device-venv/bin/python). */
  readonly python?: string;
  /** Append the check's record to the port's local results (default true). */
  readonly record?: boolean;
  readonly signal?: AbortSignal;
}

export interface DeviceBlocksCheckResult {
  readonly port: string;
  readonly status: "passed" | "failed";
  readonly summary: string;
  /** pytest's output. */
  readonly log: string;
  readonly record?: BenchRecord;
}

/** What device-plugin/tests/blocks.py `write_report` writes per variant of a port's check. */
const BlocksReport = z.object({
  port: z.string(),
  variant: z.string(),
  prefill: z.int().positive(),
  decode: z.int().nonnegative(),
  blocks: z
    .array(
      z.object({ site: z.string(), max_abs_diff: z.number(), tolerance: z.number(), passed: z.boolean() }),
    )
    .min(1),
});
type BlocksReport = z.infer<typeof BlocksReport>;

/**
 * A port whose device code vLLM does not serve here (its manifest's `reference.device_blocks`):
 * runs the plugin's block-by-block test (device-plugin/<test>, which dumps the engine's layer
 * outputs with `bringup device blocks`), and records the largest |plugin - engine| over every
 * block as the series `<port>/device-blocks`, passed only when pytest passed and every block was
 * within its tolerance.
 */
export async function deviceBlocksCheck(options: DeviceBlocksCheckOptions): Promise<DeviceBlocksCheckResult> {
  const catalog = await loadCatalog(options.root);
  const port = catalog.ports.find((p) => p.id === options.portId);
  const spec = port?.manifest.reference?.device_blocks;
  if (port === undefined || spec === undefined) {
    throw new BringupError(
      "PORT_NO_DEVICE_CHECK",
      `port ${options.portId} has no block-by-block device check: it needs a \`reference.device_blocks\` in its port.yaml (\`bringup ports list\` names the ports).`,
      { subject: options.portId },
    );
  }
  const python = await devicePython(options.root, options.python);
  const logDir = join(options.root, ".cache", "device-logs");
  await mkdir(logDir, { recursive: true });
  const log = join(logDir, `${port.id}-blocks.log`);
  const reports = await mkdtemp(join(tmpdir(), "bringup-device-blocks-"));
  try {
    const exit = await runPytest(
      python,
      join(options.root, "device-plugin"),
      spec.test,
      reports,
      log,
      options.signal,
    );
    const found = await readReports(reports, port.id);
    const blocks = found.flatMap((r) => r.blocks);
    const worst = Math.max(...blocks.map((b) => b.max_abs_diff));
    const tolerance = Math.min(...blocks.map((b) => b.tolerance));
    const passed = exit === 0 && found.length > 0 && blocks.every((b) => b.passed);
    // The test's variants of the check, e.g. a recurrent block's chunked and token-by-token prefill.
    const variants = found.map((r) => r.variant).join(" and ");
    const summary =
      found.length === 0
        ? `pytest ${spec.test} exited ${exit} without a block report; see ${log}`
        : `${found[0]?.blocks.length} blocks (embeddings, every layer's mixer and feed-forward outputs, logits) over ${found[0]?.prefill} prompt tokens and ${found[0]?.decode} decode steps (${variants}): largest |plugin - engine| ${worst.toExponential(2)} (tolerance ${tolerance.toExponential(0)})${exit === 0 ? "" : `; pytest exited ${exit}, see ${log}`}`;
    const status = passed ? "passed" : "failed";
    const record =
      options.record === false || found.length === 0
        ? undefined
        : await recordBlocks(options.root, port.id, spec.record, status, summary, found);
    return { port: port.id, status, summary, log, ...(record ? { record } : {}) };
  } finally {
    await rm(reports, { recursive: true, force: true });
  }
}

function runPytest(
  python: string,
  cwd: string,
  test: string,
  reports: string,
  log: string,
  signal: AbortSignal | undefined,
): Promise<number> {
  return open(log, "w").then(
    (file) =>
      new Promise<number>((resolve, reject) => {
        const child = spawn(python, ["-m", "pytest", "-q", test], {
          cwd,
          env: { ...process.env, BRINGUP_DEVICE_BLOCKS_REPORT: reports },
          stdio: ["ignore", file.fd, file.fd],
          ...(signal ? { signal } : {}),
        });
        child.on("error", (error) => void file.close().then(() => reject(error)));
        child.on("exit", (code) => void file.close().then(() => resolve(code ?? 1)));
      }),
  );
}

async function readReports(dir: string, port: string): Promise<BlocksReport[]> {
  const names = (await readdir(dir)).filter((n) => n.startsWith(`${port}.`) && n.endsWith(".json")).sort();
  return Promise.all(
    names.map(async (n) => BlocksReport.parse(JSON.parse(await readFile(join(dir, n), "utf8")))),
  );
}

async function recordBlocks(
  root: string,
  portId: string,
  series: string,
  status: "passed" | "failed",
  summary: string,
  reports: readonly BlocksReport[],
): Promise<BenchRecord> {
  const local = localResultsDir(root, portId);
  const published = join(root, "ports", portId, RESULTS_DIR);
  const samples = reports.map((r) => Math.max(...r.blocks.map((b) => b.max_abs_diff)));
  return appendRecord(local, {
    schema: "bringup.record/1",
    id: nextSeriesId(series, await recordIds(local, published)),
    port: portId,
    metric: "block_output_max_abs_diff",
    label: `largest |plugin block - engine| over every layer output, each block on the engine's input: gate ${status}`,
    unit: "abs",
    method: "single-run",
    context: `the bringup_vllm plugin's plain-PyTorch blocks (not served by vLLM) vs the reference engine: ${summary}`,
    source: { kind: "measured", tool: "bringup device check", command: `bringup device check ${portId}` },
    arms: [
      {
        name: "the bringup_vllm plugin's plain-PyTorch blocks, one by one",
        samples,
        figure: { shape: "point", value: Number(Math.max(...samples).toPrecision(3)) },
      },
    ],
    recorded_at: new Date().toISOString(),
  });
}
