/**
 * Benchmark: MXFP4 to FP8 conversion throughput against a plain copy of the same bytes, in one run.
 *
 *   npx tsx bench/weights-convert.ts [--gib 2] [--dir /tmp]
 *
 * Generates an MXFP4 checkpoint of at least --gib GiB (gpt-oss layout: *_blocks / *_scales experts,
 * sharded with an index), then runs each arm in its own child process so each arm's peak RSS is its
 * own: a chunked read/write copy of the shards, and `convertCheckpoint(..., { to: "fp8" })` with one
 * and with two worker threads. Arms run in the order copy, w1, w2, w2, w1, copy (ABBA), so drift in
 * the machine hits both sides; ratios are taken within each half and both are printed.
 */

import { execFileSync } from "node:child_process";
import { randomFillSync } from "node:crypto";
import { mkdtemp, open, readdir, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { convertCheckpoint, SafetensorsWriter, shardName, writeShardIndex } from "../src/formats/index.js";

const CHUNK = 16 * 2 ** 20;

interface ArmResult {
  seconds: number;
  /** CPU time of the arm's process, all threads: on a shared machine, wall time alone misleads. */
  cpuSeconds: number;
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

/** A plain streaming copy of every shard, the same chunk size, closed like the converter's output (neither syncs). */
async function copyArm(src: string, dst: string): Promise<number> {
  const { mkdir } = await import("node:fs/promises");
  await mkdir(dst);
  const buffer = new Uint8Array(CHUNK);
  let bytes = 0;
  for (const name of (await readdir(src)).filter((n) => n.endsWith(".safetensors"))) {
    const [input, output] = [await open(join(src, name), "r"), await open(join(dst, name), "w")];
    for (let position = 0; ; ) {
      const { bytesRead } = await input.read(buffer, 0, CHUNK, position);
      if (bytesRead === 0) break;
      await output.write(buffer, 0, bytesRead, position);
      position += bytesRead;
      bytes += bytesRead;
    }
    await Promise.all([input.close(), output.close()]);
  }
  return bytes;
}

async function runArm(arm: string, src: string, dst: string, workers: number): Promise<ArmResult> {
  const started = performance.now();
  let sourceBytes: number;
  if (arm === "copy") sourceBytes = await copyArm(src, dst);
  else sourceBytes = (await convertCheckpoint(src, dst, { to: "fp8", workers })).sourceBytes;
  const seconds = (performance.now() - started) / 1000;
  const usage = process.resourceUsage();
  const cpuSeconds = (usage.userCPUTime + usage.systemCPUTime) / 1e6;
  return { seconds, cpuSeconds, sourceBytes, maxRssBytes: usage.maxRSS * 1024 };
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
  },
});

if (values.arm !== undefined) {
  const result = await runArm(values.arm, values.src as string, values.dst as string, Number(values.workers));
  process.stdout.write(`${JSON.stringify(result)}\n`);
} else {
  const root = await mkdtemp(join(values.dir, "bringup-bench-weights-"));
  try {
    const src = join(root, "mxfp4");
    const { mkdir } = await import("node:fs/promises");
    await mkdir(src);
    const load = (await import("node:os")).loadavg()[0] as number;
    process.stdout.write(
      `load average at start: ${load.toFixed(1)} on ${(await import("node:os")).availableParallelism()} cores\n`,
    );
    const t0 = performance.now();
    const bytes = await generate(src, Number(values.gib));
    execFileSync("sync");
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
      execFileSync("sync"); // no arm pays for writing back the dirty pages of the one before
      const label = arm === "copy" ? "copy" : `convert fp8, ${workers} worker${workers === 1 ? "" : "s"}`;
      results.push({ label, result });
      const rate = result.sourceBytes / 2 ** 30 / result.seconds;
      process.stdout.write(
        `${label.padEnd(26)} ${result.seconds.toFixed(2).padStart(7)} s  ${rate.toFixed(3)} GiB/s of source  ` +
          `${result.cpuSeconds.toFixed(1)} CPU s  peak RSS ${(result.maxRssBytes / 2 ** 20).toFixed(0)} MiB\n`,
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
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
