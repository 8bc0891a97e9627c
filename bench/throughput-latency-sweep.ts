/**
 * Benchmark: output throughput against latency as concurrency rises, for a port's two KV layouts
 * on the embedded CPU engine, both arms in one run (the curve GuideLLM and AIPerf draw).
 *
 *   npx tsx bench/throughput-latency-sweep.ts [--port mimo-v2.6-flash] [--concurrency 1,2,4]
 *     [--requests-per-stream 2] [--input-len 128] [--output-len 32] [--threads 2] [--record]
 *
 * The port's tiny reference model (made once, cached as `bringup up` caches it) is served twice, in
 * the baseline's KV layout and in the port's, on one KV byte budget. At each concurrency both
 * servers get the same seeded random requests (concurrency x requests-per-stream of them), the arm
 * that goes first alternating from one concurrency to the next. Printed per point and arm: output
 * tok/s, and median and p99 of TTFT and TPOT in ms. --record keeps each point's records (output
 * tok/s; TTFT, TPOT and end-to-end latency per request) in the port's local store
 * (.bringup/results/<port>/, gitignored); `bringup records publish <port>` adds them to
 * ports/<port>/results/, and the port's page then draws the sweep.
 */
import { join } from "node:path";
import {
  armFingerprint,
  randomWorkload,
  runSweep,
  type SweepArm,
  sweepId,
  sweepRecords,
} from "../src/bench/index.js";
import { findPort, loadCatalog, localResultsDir } from "../src/catalog/index.js";
import { probeEndpoint } from "../src/client/index.js";
import { findArchitecture, loadModel, readCorpus } from "../src/engine/index.js";
import { cachedTinyModel } from "../src/flow/index.js";
import { appendRecord, localServerFingerprint } from "../src/records/index.js";
import { type RunningServer, startServer } from "../src/server/index.js";
import { benchArgs } from "./args.js";

const args = benchArgs(import.meta.url, {
  port: { type: "string", default: "mimo-v2.6-flash" },
  concurrency: { type: "string", default: "1,2,4" },
  "requests-per-stream": { type: "string", default: "2" },
  "input-len": { type: "string", default: "128" },
  "output-len": { type: "string", default: "32" },
  threads: { type: "string", default: "2" },
  record: { type: "boolean", default: false },
});
const concurrencies = args.concurrency.split(",").map(Number);
const requestsPerStream = Number(args["requests-per-stream"]);
const inputLen = Number(args["input-len"]);
const outputLen = Number(args["output-len"]);
const threads = Number(args.threads);

const root = join(import.meta.dirname, "..");
const port = findPort(await loadCatalog(root), args.port);
const reference = port.manifest.reference;
if (reference === undefined) {
  process.stderr.write(`port ${port.id} has no tiny reference config (reference: in its port.yaml).\n`);
  process.exit(2);
}
const family = await findArchitecture(reference.config, `ports/${port.id}/port.yaml reference.config`);
const tiny = await cachedTinyModel(
  port.id,
  reference.config,
  family,
  await readCorpus(),
  join(root, ".cache", "bringup", "models"),
);
const model = await loadModel(tiny.dir);
const layouts = [reference.baseline?.kv_layout ?? "full", reference.kv_layout] as const;
const maxConcurrency = Math.max(...concurrencies);
const servers: RunningServer[] = [];
for (const layout of layouts) {
  servers.push(
    await startServer({
      model,
      port: 0,
      threads,
      kvLayout: layout,
      maxModelLen: inputLen + outputLen + 16,
      maxNumSeqs: maxConcurrency,
      servedModelName: `${port.id}-tiny`,
      requestLines: false,
    }),
  );
}
const workload = (requests: number) => randomWorkload({ numPrompts: requests, inputLen, outputLen, seed: 1 });
const hash = workload(1).hash;
const arms: SweepArm[] = [];
for (const [i, layout] of layouts.entries()) {
  const server = servers[i] as RunningServer;
  // What the server says of itself (its name and version, the model), as bringup up records it.
  const { probe } = await probeEndpoint(server.url);
  arms.push({
    name: `${layout} KV layout`,
    target: { url: server.url, model: probe.model, ignoreEos: true },
    fingerprint: armFingerprint(
      localServerFingerprint({
        ...probe.fingerprint,
        server_flags: [...(probe.fingerprint.server_flags ?? []), `--kv-layout=${layout}`],
      }),
      hash,
    ),
  });
}

try {
  const started = new Date();
  const points = await runSweep({
    arms: [arms[0] as SweepArm, arms[1] as SweepArm],
    concurrencies,
    requestsPerStream,
    workload,
    onPoint: (point, done, total) => {
      const { outputThroughput, ttft, tpot } = point.result.metrics;
      const p99 = (summary: typeof ttft) => summary.percentiles["99"] ?? Number.NaN;
      process.stdout.write(
        `[${done}/${total}] concurrency ${point.concurrency}, ${point.arm}: ${outputThroughput.toFixed(1)} output tok/s; TTFT median ${ttft.median.toFixed(0)} ms, p99 ${p99(ttft).toFixed(0)} ms; TPOT median ${tpot.median.toFixed(1)} ms, p99 ${p99(tpot).toFixed(1)} ms\n`,
      );
    },
  });
  if (args.record) {
    const id = sweepId(port.id, started);
    const command = `npx tsx bench/throughput-latency-sweep.ts --port ${port.id} --concurrency ${concurrencies.join(",")} --requests-per-stream ${requestsPerStream} --input-len ${inputLen} --output-len ${outputLen} --record`;
    const records = sweepRecords(points, {
      port: port.id,
      id,
      arms,
      workloadName: `random-${inputLen}-${outputLen}`,
      command,
    });
    for (const record of records) await appendRecord(localResultsDir(root, port.id), record);
    process.stdout.write(`recorded ${records.length} records of ${id} in .bringup/results/${port.id}/\n`);
  }
} finally {
  for (const server of servers) await server.close();
}
