import { type Command, InvalidArgumentError } from "commander";
import {
  findPort,
  GATE_KINDS,
  type Gate as GateSpec,
  loadCatalog,
  localResultsDir,
} from "../../catalog/index.js";
import { checkEndpoint, probeEndpoint } from "../../client/index.js";
import { BringupError } from "../../common/errors.js";
import { readCorpus } from "../../engine/index.js";
import {
  allPassed,
  appendGateRecords,
  type GateOutcome,
  gatesNeedingEndpoint,
  missingGateInputs,
  runGateSession,
  type SamplingMode,
  writeGoldenDecodes,
} from "../../gates/index.js";
import { projectRoot } from "../root.js";
import { table } from "./ports.js";

interface GateOptions {
  endpoint?: string;
  reference?: string;
  referenceValue?: number;
  fullAttentionCapacity?: number;
  only?: string[];
  contexts?: number[];
  answerTokens?: number;
  window?: number;
  windows?: number;
  source?: string;
  converted?: string;
  golden?: string;
  writeGolden?: string;
  timeout?: number;
  record: boolean;
  json?: boolean;
}

function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError("expected a number above 0.");
  return n;
}

function positiveInt(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new InvalidArgumentError("expected a whole number >= 1.");
  return Number(value);
}

function kinds(value: string): string[] {
  const list = value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = list.filter((k) => !(GATE_KINDS as readonly string[]).includes(k));
  if (unknown.length > 0 || list.length === 0)
    throw new InvalidArgumentError(`expected gate kinds from ${GATE_KINDS.join(", ")}.`);
  return list;
}

function lengths(value: string): number[] {
  return value.split(",").map((s) => positiveInt(s.trim()));
}

export function registerGate(program: Command): void {
  program
    .command("gate")
    .description(
      "run a port's correctness gates against an OpenAI-compatible endpoint and record the results",
    )
    .argument("<port>", "port id, as in ports/<id>/")
    .option("--endpoint <url>", "the server under test, e.g. http://127.0.0.1:8000")
    .option(
      "--reference <url>",
      "a reference endpoint measured in the same session (perplexity, two builds, full-attention KV)",
    )
    .option("--reference-value <ppl>", "a recorded reference perplexity", positiveNumber)
    .option(
      "--full-attention-capacity <tokens>",
      "KV token capacity of a full-attention layout in the same memory",
      positiveInt,
    )
    .option("--only <kinds>", `comma-separated gate kinds (${GATE_KINDS.join(", ")})`, kinds)
    .option(
      "--contexts <lengths>",
      "needle context lengths to run instead of the manifest's, e.g. 1024,2048",
      lengths,
    )
    .option("--answer-tokens <n>", "needles: tokens each answer may take (default 32)", positiveInt)
    .option("--window <tokens>", "perplexity window length in tokens (default 512)", positiveInt)
    .option("--windows <n>", "number of perplexity windows (default 4)", positiveInt)
    .option("--source <dir>", "weights gate: the source checkpoint")
    .option("--converted <dir>", "weights gate: the converted checkpoint")
    .option("--golden <file>", "bit-identical decode: the golden file to compare against")
    .option(
      "--write-golden <file>",
      "write the golden decodes of --endpoint (a trusted build) to a file, and run no gate",
    )
    .option("--timeout <ms>", "per-request timeout in milliseconds (default 60000)", positiveInt)
    .option(
      "--no-record",
      "do not append records to the port's local store (.bringup/results/<id>; `bringup records publish` publishes them)",
    )
    .option("--json", "print JSON")
    .action(async (port: string, options: GateOptions, command: Command) => {
      if (options.reference !== undefined && options.referenceValue !== undefined) {
        throw new BringupError("BAD_ARGUMENT", "pass either --reference or --reference-value, not both.");
      }
      const root = projectRoot(command);
      const loaded = findPort(await loadCatalog(root), port);
      await checkEndpoints(options);
      // The device-vs-reference gate lives in the reference section (`bringup device check` runs it
      // on the CPU); a recipe's run_gates.sh asks for it by kind against the device's endpoint.
      const deviceCheck = options.only?.includes("device-logprobs")
        ? loaded.manifest.reference?.device_check
        : undefined;
      const declared = deviceCheck ? [...loaded.manifest.gates, deviceCheck] : loaded.manifest.gates;
      const specs = options.writeGolden === undefined ? plannedGates(port, declared, options) : [];
      if (options.writeGolden !== undefined) {
        await writeGolden(loaded.manifest.gates, options, options.writeGolden);
        return;
      }
      const { context, outcomes } = await runGateSession(specs, {
        ...(options.endpoint !== undefined ? { endpointUrl: options.endpoint } : {}),
        ...(options.reference !== undefined ? { referenceUrl: options.reference } : {}),
        ...(options.referenceValue !== undefined ? { referenceValue: options.referenceValue } : {}),
        ...(options.fullAttentionCapacity !== undefined
          ? { fullAttentionCapacity: options.fullAttentionCapacity }
          : {}),
        ...(options.contexts !== undefined ? { needleContexts: options.contexts } : {}),
        ...(options.answerTokens !== undefined ? { needleAnswerTokens: options.answerTokens } : {}),
        ...(options.window !== undefined ? { windowTokens: options.window } : {}),
        ...(options.windows !== undefined ? { windows: options.windows } : {}),
        ...(options.source !== undefined ? { sourceCheckpoint: options.source } : {}),
        ...(options.converted !== undefined ? { convertedCheckpoint: options.converted } : {}),
        ...(options.golden !== undefined ? { goldenFile: options.golden } : {}),
        ...(options.timeout !== undefined ? { request: { timeoutMs: options.timeout } } : {}),
        corpus: await readCorpus(),
      });
      const records = options.record
        ? await appendGateRecords(
            localResultsDir(root, loaded.id),
            port,
            specs.map((spec, i) => ({ spec, outcome: outcomes[i] as GateOutcome })),
            context,
          )
        : [];
      if (options.json) {
        const probe = (p: typeof context.endpoint) => p?.probe ?? null;
        const out = {
          port,
          endpoint: probe(context.endpoint),
          reference: probe(context.reference),
          outcomes,
          records: records.map((r) => r.id),
        };
        process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
      } else {
        process.stdout.write(`${render(outcomes)}\n`);
        for (const r of records) process.stdout.write(`recorded ${r.id}\n`);
      }
      if (!allPassed(outcomes)) process.exitCode = 1;
    });
}

/**
 * The gates to run, refused before any request when none is declared, when one needs a server and
 * no --endpoint is given, or when one needs a baseline (--reference, --golden, ...) that is missing.
 */
function plannedGates(port: string, gates: readonly GateSpec[], options: GateOptions): GateSpec[] {
  const specs: GateSpec[] = gates.filter((g) => !options.only || options.only.includes(g.kind));
  if (specs.length === 0) {
    throw new BringupError(
      "NO_GATES",
      `port ${port} declares no ${options.only ? `${options.only.join("/")} ` : ""}gates in its port.yaml.`,
      { subject: port },
    );
  }
  const needing = gatesNeedingEndpoint(specs);
  if (options.endpoint === undefined && needing.length > 0) {
    const kinds = [...new Set(needing.map((spec) => spec.kind))];
    throw new BringupError(
      "GATE_NEEDS_ENDPOINT",
      `the ${kinds.join(", ")} gate${kinds.length === 1 ? "" : "s"} of ${port} run${kinds.length === 1 ? "s" : ""} against a server: pass --endpoint URL${needing.length < specs.length ? ", or --only weights-bit-identity for the checkpoint comparison alone" : ""}.`,
      { subject: port },
    );
  }
  const [missing] = missingGateInputs(specs, {
    reference: options.reference !== undefined,
    referenceValue: options.referenceValue !== undefined,
    fullAttentionCapacity: options.fullAttentionCapacity !== undefined,
    goldenFile: options.golden !== undefined,
  });
  if (missing) throw missing;
  return specs;
}

/** Checks --endpoint and --reference within seconds, before any gate runs. */
async function checkEndpoints(options: GateOptions): Promise<void> {
  const request = options.timeout !== undefined ? { timeoutMs: options.timeout } : {};
  if (options.endpoint !== undefined) await checkEndpoint(options.endpoint, "--endpoint", request);
  if (options.reference !== undefined) await checkEndpoint(options.reference, "--reference", request);
}

/** Writes the golden decodes for the sampling modes the port's bit-identity gates use. */
async function writeGolden(gates: readonly GateSpec[], options: GateOptions, path: string): Promise<void> {
  if (options.endpoint === undefined) {
    throw new BringupError(
      "BAD_ARGUMENT",
      "--write-golden decodes on a trusted build: pass --endpoint URL too.",
    );
  }
  const modes = new Set<SamplingMode>(["greedy"]);
  for (const g of gates) if (g.kind === "bit-identical-decode") for (const m of g.sampling) modes.add(m);
  const target = await probeEndpoint(
    options.endpoint,
    options.timeout !== undefined ? { timeoutMs: options.timeout } : {},
  );
  const golden = await writeGoldenDecodes(target.endpoint, [...modes], path);
  process.stdout.write(
    `wrote ${golden.decodes.length} golden decodes of ${golden.model} (${[...modes].join(" + ")}) to ${path}\n`,
  );
}

/** The gate table, then a length x depth grid for each needle gate that ran. */
function render(outcomes: readonly GateOutcome[]): string {
  const rows = [
    ["gate", "status", "result"],
    ...outcomes.map((o) => [o.kind, o.status, o.code ? `[${o.code}] ${o.summary}` : o.summary]),
  ];
  const parts = [table(rows)];
  for (const o of outcomes) {
    if (!o.grid) continue;
    const header = ["context", ...o.grid.depths.map((d) => `depth ${d.toFixed(2)}`)];
    const grid = o.grid.rows.map((r) => [
      String(r.context),
      ...r.retrieved.map((hit) => (hit ? "found" : "MISSED")),
    ]);
    parts.push(`\nneedles, length x depth:\n${table([header, ...grid])}`);
  }
  return parts.join("\n");
}
