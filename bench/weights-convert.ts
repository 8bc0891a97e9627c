/**
 * Benchmark: MXFP4 to FP8 conversion throughput against a plain copy of the same bytes, in one run.
 *
 *   npx tsx bench/weights-convert.ts [--gib 2] [--dir /tmp] [--settle 10]
 *
 * Builds the library (`tsc -p tsconfig.build.json`, as `npm ci` does) and generates an MXFP4 checkpoint
 * of at least --gib GiB (gpt-oss layout: *_blocks / *_scales experts, sharded with an index), then runs
 * each arm in its own child process so each arm's peak RSS is its own, on the built JavaScript the
 * CLI runs (from sources, each worker thread would also spend half a second compiling TypeScript): the copy baseline (see copyArm: the same reader, writer and chunks, no transform), and
 * `convertCheckpoint(..., { to: "fp8" })` with one and with two worker threads. Every arm reads the
 * same source, in the page cache since it was generated, and writes fresh files that are deleted
 * before the next arm starts, after which the bench syncs and waits (see settle), so each arm finds
 * the page cache and the VM's memory in the same state (dropping caches would need root, would hit
 * everyone on the host, and would not touch what made the copy arm unstable).
 * Arms run in the order copy, w1, w2, w2, w1, copy (ABBA), so drift in the machine hits both sides;
 * ratios are taken within each half and both are printed, with CPU seconds per arm: on a shared
 * machine, wall time alone misleads.
 */

import { execFileSync } from "node:child_process";
import { randomFillSync } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { SafetensorsWriter, shardName, writeShardIndex } from "../src/formats/index.js";

/** The built library, which the arms measure. */
type Formats = typeof import("../src/formats/index.js");
const builtFormats = () =>
  import(new URL("../dist/src/formats/index.js", import.meta.url).href) as Promise<Formats>;

const CHUNK = 16 * 2 ** 20;

interface ArmResult {
  seconds: number;
  /** CPU time of the arm's process, all threads: on a shared machine, wall time alone misleads. */
  cpuSeconds: number;
  /** Of which in the kernel (system calls, page cache): the I/O's share. */
  systemSeconds: number;
  sourceBytes: number;
  maxRssBytes: number;
}

async function generate(dir: string, gib: number): Promise<number> {
  const [experts, rows, groups] = [32, 1024, 64];
  const blockBytes = experts * rows * groups * 16;
  const scaleBytes = experts * rows * groups;
  const tensors = Math.ceil((gib * 2 ** 30) / (blockBytes + scaleBytes) / 2) * 2;
  const perShard = 16;
  const shards = Math.ceil(tensors / perShard);
  const weightMap: Record<string, string> = {};
  let total = 0;
  for (let s = 0; s < shards; s += 1) {
    const file = shardName(s, shards);
    const layouts = [];
    for (let t = s * perShard; t < Math.min(tensors, (s + 1) * perShard); t += 1) {
      const base = `model.layers.${t >> 1}.mlp.experts.${t % 2 === 0 ? "gate_up_proj" : "down_proj"}`;
      layouts.push({ name: `${base}_blocks`, dtype: "U8" as const, shape: [experts, rows, groups, 16] });
      layouts.push({ name: `${base}_scales`, dtype: "U8" as const, shape: [experts, rows, groups] });
    }
    const writer = await SafetensorsWriter.create(join(dir, file), layouts, { format: "pt" });
    const chunk = new Uint8Array(CHUNK);
    for (const layout of layouts) {
      weightMap[layout.name] = file;
      const size = layout.shape.reduce((a, b) => a * b, 1);
      for (let at = 0; at < size; at += CHUNK) {
        const piece = chunk.subarray(0, Math.min(CHUNK, size - at));
        randomFillSync(piece);
        // Scales within 8 binades of each other: every 128x128 tile converts exactly.
        if (layout.name.endsWith("_scales"))
          for (let i = 0; i < piece.length; i += 1) piece[i] = 118 + ((piece[i] as number) & 7);
        await writer.write(layout.name, piece);
      }
      total += size;
    }
    await writer.finish();
  }
  await writeShardIndex(dir, weightMap, total);
  return total;
}

/**
 * The copy baseline: the same bytes through the same streaming reader and writer the conversion
 * uses (SafetensorsFile ranges into a reused buffer, SafetensorsWriter to a temporary file renamed
 * at the end), the same 16 MiB chunks, with the next read in flight while the current chunk is
 * written, so the copy is not held back by waiting on itself. It reads the same page-cached source
 * and writes fresh files, as the conversion does; only the transform (and its 1.9x more output
 * bytes) differs.
 */
async function copyArm(src: string, dst: string): Promise<number> {
  const { openCheckpoint, SafetensorsWriter } = await builtFormats();
  await mkdir(dst);
  const ck = await openCheckpoint(src);
  const buffers = [new Uint8Array(CHUNK), new Uint8Array(CHUNK)];
  let bytes = 0;
  try {
    for (const shard of ck.shards) {
      const writer = await SafetensorsWriter.create(
        join(dst, basename(shard.path)),
        shard.tensors,
        shard.metadata,
      );
      const pieces = shard.tensors.flatMap((t) =>
        Array.from({ length: Math.ceil(t.byteLength / CHUNK) }, (_, k) => ({
          name: t.name,
          start: k * CHUNK,
          end: Math.min(t.byteLength, (k + 1) * CHUNK),
        })),
      );
      const read = (k: number) => {
        const piece = pieces[k] as (typeof pieces)[number];
        return shard.readTensorRange(piece.name, piece.start, piece.end, buffers[k % 2]);
      };
      let pending = pieces.length > 0 ? read(0) : undefined;
      for (let k = 0; k < pieces.length; k += 1) {
        const chunk = await (pending as Promise<Uint8Array>);
        pending = k + 1 < pieces.length ? read(k + 1) : undefined;
        await writer.write((pieces[k] as (typeof pieces)[number]).name, chunk);
        bytes += chunk.length;
      }
      await writer.finish();
    }
  } finally {
    await ck.close();
  }
  return bytes;
}

async function runArm(arm: string, src: string, dst: string, workers: number): Promise<ArmResult> {
  const started = performance.now();
  let sourceBytes: number;
  if (arm === "copy") sourceBytes = await copyArm(src, dst);
  else {
    const { convertCheckpoint } = await builtFormats();
    sourceBytes = (await convertCheckpoint(src, dst, { to: "fp8", workers })).sourceBytes;
  }
  const seconds = (performance.now() - started) / 1000;
  const usage = process.resourceUsage();
  const cpuSeconds = (usage.userCPUTime + usage.systemCPUTime) / 1e6;
  return {
    seconds,
    cpuSeconds,
    systemSeconds: usage.systemCPUTime / 1e6,
    sourceBytes,
    maxRssBytes: usage.maxRSS * 1024,
  };
}

function child(arm: string, src: string, dst: string, workers: number): ArmResult {
  const loader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  const out = execFileSync(
    process.execPath,
    [
      "--import",
      loader,
      fileURLToPath(import.meta.url),
      "--arm",
      arm,
      "--src",
      src,
      "--dst",
      dst,
      "--workers",
      String(workers),
    ],
    { encoding: "utf8", maxBuffer: 1 << 20 },
  );
  return JSON.parse(out.trim().split("\n").at(-1) as string) as ArmResult;
}

const { values } = parseArgs({
  options: {
    gib: { type: "string", default: "2" },
    dir: { type: "string", default: tmpdir() },
    arm: { type: "string" },
    src: { type: "string" },
    dst: { type: "string" },
    workers: { type: "string", default: "1" },
    settle: { type: "string", default: "10" },
  },
});

/**
 * Between arms: sync, so no arm pays for writing back the dirty pages of the one before, then wait
 * --settle seconds. On a VM that hands freed memory back to its host (free page reporting, as on
 * this Firecracker guest: page_reporting_order=11 on the kernel command line), page-cache pages
 * freed by the last arm's deleted output go back within seconds, and touching such memory again
 * costs the host's page faults (writing 1 GiB here: 0.4 s of system time warm, 0.5-2.5 s cold).
 * Whether an arm found them still warm was what made the copy arm swing from 0.5 to 5 s. After the
 * wait, every arm writes into memory in the same, cold state, as the first run on a fresh machine.
 */
async function settle(): Promise<void> {
  execFileSync("sync");
  await new Promise((resolve) => setTimeout(resolve, Number(values.settle) * 1000));
}

if (values.arm !== undefined) {
  // Worker threads inherit execArgv; the built worker needs no TypeScript loader.
  process.execArgv.splice(0);
  await builtFormats(); // loaded before the clock starts, as the CLI has it loaded
  const result = await runArm(values.arm, values.src as string, values.dst as string, Number(values.workers));
  process.stdout.write(`${JSON.stringify(result)}\n`);
} else {
  const root = await mkdtemp(join(values.dir, "bringup-bench-weights-"));
  try {
    const src = join(root, "mxfp4");
    await mkdir(src);
    const load = (await import("node:os")).loadavg()[0] as number;
    process.stdout.write(
      `load average at start: ${load.toFixed(1)} on ${(await import("node:os")).availableParallelism()} cores\n`,
    );
    const built = performance.now();
    execFileSync("npx", ["tsc", "-p", "tsconfig.build.json"], {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      stdio: "inherit",
    });
    process.stdout.write(`built dist/ in ${((performance.now() - built) / 1000).toFixed(1)} s\n`);
    const t0 = performance.now();
    const bytes = await generate(src, Number(values.gib));
    await settle();
    const gib = (n: number) => (n / 2 ** 30).toFixed(2);
    process.stdout.write(
      `generated ${gib(bytes)} GiB MXFP4 checkpoint in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
    );
    const order: [string, number][] = [
      ["copy", 0],
      ["convert", 1],
      ["convert", 2],
      ["convert", 2],
      ["convert", 1],
      ["copy", 0],
    ];
    const results: { label: string; result: ArmResult }[] = [];
    for (const [i, [arm, workers]] of order.entries()) {
      const dst = join(root, `out-${i}`);
      const result = child(arm, src, dst, workers);
      await rm(dst, { recursive: true, force: true });
      await settle();
      const label = arm === "copy" ? "copy" : `convert fp8, ${workers} worker${workers === 1 ? "" : "s"}`;
      results.push({ label, result });
      const rate = result.sourceBytes / 2 ** 30 / result.seconds;
      process.stdout.write(
        `${label.padEnd(26)} ${result.seconds.toFixed(2).padStart(7)} s  ${rate.toFixed(3)} GiB/s of source  ` +
          `${result.cpuSeconds.toFixed(1)} CPU s (${result.systemSeconds.toFixed(1)} system)  peak RSS ${(result.maxRssBytes / 2 ** 20).toFixed(0)} MiB\n`,
      );
    }
    const rate = (k: number) => {
      const r = (results[k] as { result: ArmResult }).result;
      return r.sourceBytes / r.seconds;
    };
    const halves = [
      { copy: rate(0), w1: rate(1), w2: rate(2) },
      { copy: rate(5), w1: rate(4), w2: rate(3) },
    ];
    for (const [h, x] of halves.entries()) {
      process.stdout.write(
        `half ${h + 1}: convert/copy 1 worker ${(x.w1 / x.copy).toFixed(2)}x, 2 workers ${(x.w2 / x.copy).toFixed(2)}x; 2 vs 1 worker ${(x.w2 / x.w1).toFixed(2)}x\n`,
      );
    }
    // Whole run: each side's total seconds over both of its arms, so one slow arm counts once.
    const seconds = (ks: number[]) =>
      ks.reduce((n, k) => n + (results[k] as { result: ArmResult }).result.seconds, 0);
    const [copy, w1, w2] = [seconds([0, 5]), seconds([1, 4]), seconds([2, 3])];
    process.stdout.write(
      `both halves: convert/copy 1 worker ${(copy / w1).toFixed(2)}x, 2 workers ${(copy / w2).toFixed(2)}x; 2 vs 1 worker ${(w1 / w2).toFixed(2)}x\n`,
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
