/**
 * Benchmark: MXFP4 to FP8 conversion as `bringup weights convert` runs it (verifying by default),
 * against the conversion's I/O alone, and standalone `weights verify` against the conversion, in one run.
 *
 *   npx tsx bench/weights-convert.ts [--gib 2] [--dir /tmp] [--settle 10]
 *
 * Builds the library (`tsc -p tsconfig.build.json`, as `npm ci` does) and generates an MXFP4 checkpoint
 * of at least --gib GiB (gpt-oss layout: *_blocks / *_scales experts, sharded with an index), and its
 * FP8 conversion for the verify arms. Each arm runs in its own child process so each arm's peak RSS
 * is its own, on the built JavaScript the CLI runs, unpinned on every core as a user runs it. The arms:
 * - "I/O alone" (see ioArm): the conversion's reads and writes, the FP8 output's sizes, through the
 *   same reader, writer and pieces, with no kernel and no verification: the floor under the conversion;
 * - `convertCheckpoint(..., { to: "fp8", verify: true })` with 1 and with 2 workers: the CLI's
 *   default, measured at both worker counts so the default (defaultWorkers) follows from it;
 * - `verifyCheckpoints(source, fp8)` with the default workers: what `weights verify` does.
 * Every arm reads the same source, in the page cache since it was generated, and writes fresh files
 * that are deleted before the next arm starts, after which the bench syncs and waits (see settle), so
 * each arm finds the page cache and the VM's memory in the same state. Arms run in one order, then
 * the reverse (ABBA), so drift in the machine hits both sides; ratios are taken within each half and
 * over both, with CPU seconds per arm: on a shared machine, wall time alone misleads.
 */

import { execFileSync } from "node:child_process";
import { randomFillSync } from "node:crypto";
import { closeSync, openSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { SafetensorsWriter, shardName, writeShardIndex } from "../src/formats/index.js";
import { benchArgs } from "./args.js";

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
  await writeShardIndex(dir, Object.entries(weightMap), total);
  return total;
}

/**
 * The conversion's I/O alone: the same reader and writer the conversion uses, in the same pieces
 * (PIECE_BYTES of source), read and written on one thread with blocking calls as each worker does, a
 * SafetensorsWriter per shard whose bytes go in place where it reserves them, writing the
 * conversion's output sizes (see fp8Layout): each blocks piece twice, for the FP8 elements it
 * becomes, and each tensor's tile scale grid once. That is the conversion with its kernel and its
 * verification taken out, the I/O floor no conversion can go under on this machine.
 */
async function ioArm(src: string, dst: string): Promise<number> {
  const { openCheckpoint, PIECE_BYTES, SafetensorsWriter, writeAtSync } = await builtFormats();
  await mkdir(dst);
  const ck = await openCheckpoint(src, { blockingReads: true });
  const buffer = new Uint8Array(PIECE_BYTES);
  let bytes = 0;
  try {
    for (const shard of ck.shards) {
      const layouts = shard.tensors.map(fp8Layout);
      const writer = await SafetensorsWriter.create(join(dst, basename(shard.path)), layouts, shard.metadata);
      const fd = openSync(writer.temporaryPath, "r+");
      try {
        for (const tensor of shard.tensors) {
          const scales = tensor.name.endsWith("_scales");
          for (let at = 0; at < tensor.byteLength; at += PIECE_BYTES) {
            const piece = await shard.readTensorRange(
              tensor.name,
              at,
              Math.min(tensor.byteLength, at + PIECE_BYTES),
              buffer,
            );
            bytes += piece.length;
            if (scales) continue;
            for (let copies = 2; copies > 0; copies -= 1)
              writeAtSync(fd, piece, writer.reserve(tensor.name, piece.length));
          }
          if (scales) {
            const grid = new Uint8Array(writer.tensors.find((t) => t.name === tensor.name)?.byteLength ?? 0);
            writeAtSync(fd, grid, writer.reserve(tensor.name, grid.length));
          }
        }
      } finally {
        closeSync(fd);
      }
      await writer.finish();
    }
  } finally {
    await ck.close();
  }
  return bytes;
}

/**
 * The size of what a generated tensor becomes in FP8 with 128x128 tiles, under its own name: blocks
 * [E, R, G, 16] give U8 elements [E, R, 32 G]; scales [E, R, G] give F32 [E, R / 128, 32 G / 128].
 */
function fp8Layout(tensor: { name: string; shape: readonly number[] }) {
  const [experts, rows, groups] = tensor.shape as [number, number, number];
  if (tensor.name.endsWith("_blocks"))
    return { name: tensor.name, dtype: "U8" as const, shape: [experts, rows, groups * 32] };
  const grid = [experts, Math.ceil(rows / 128), Math.ceil((groups * 32) / 128)];
  return { name: tensor.name, dtype: "F32" as const, shape: grid };
}

async function runArm(arm: string, src: string, dst: string, workers: number): Promise<ArmResult> {
  const formats = await builtFormats();
  const before = process.resourceUsage();
  const started = performance.now();
  let sourceBytes: number;
  if (arm === "io") sourceBytes = await ioArm(src, dst);
  else if (arm === "verify") {
    // dst is the FP8 conversion made once, before the arms.
    const report = await formats.verifyCheckpoints(src, dst, { workers });
    if (!report.ok) throw new Error(`${dst} does not verify against ${src}`);
    const ck = await formats.openCheckpoint(src);
    sourceBytes = ck.byteLength;
    await ck.close();
  } else {
    sourceBytes = (await formats.convertCheckpoint(src, dst, { to: "fp8", workers, verify: true }))
      .sourceBytes;
  }
  const seconds = (performance.now() - started) / 1000;
  // The arm's own CPU time: the child's start (loader, imports) is not the arm's.
  const usage = process.resourceUsage();
  const [user, system] = [usage.userCPUTime - before.userCPUTime, usage.systemCPUTime - before.systemCPUTime];
  return {
    seconds,
    cpuSeconds: (user + system) / 1e6,
    systemSeconds: system / 1e6,
    sourceBytes,
    maxRssBytes: usage.maxRSS * 1024,
  };
}

function child(arm: string, src: string, dst: string, workers: number): ArmResult {
  const loader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  const out = execFileSync(
    process.execPath,
    [
      ...["--import", loader, fileURLToPath(import.meta.url)],
      ...["--arm", arm, "--src", src, "--dst", dst, "--workers", String(workers)],
    ],
    { encoding: "utf8", maxBuffer: 1 << 20 },
  );
  return JSON.parse(out.trim().split("\n").at(-1) as string) as ArmResult;
}

const values = benchArgs(import.meta.url, {
  gib: { type: "string", default: "2" },
  dir: { type: "string", default: tmpdir() },
  arm: { type: "string" },
  src: { type: "string" },
  dst: { type: "string" },
  workers: { type: "string", default: "1" },
  settle: { type: "string", default: "10" },
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
    const fp8 = join(root, "fp8");
    await (await builtFormats()).convertCheckpoint(src, fp8, { to: "fp8" });
    await settle();
    // The default as the CLI would pick it now; both counts are measured either way.
    const defaultCount = (await builtFormats()).defaultWorkers();
    const half = [
      { arm: "io", workers: 0 },
      { arm: "convert", workers: 1 },
      { arm: "convert", workers: 2 },
      { arm: "verify", workers: defaultCount },
    ];
    const order = [...half, ...[...half].reverse()];
    const results: ArmResult[] = [];
    for (const [i, { arm, workers }] of order.entries()) {
      const dst = arm === "verify" ? fp8 : join(root, `out-${i}`);
      const result = child(arm, src, dst, workers);
      if (arm !== "verify") await rm(dst, { recursive: true, force: true });
      await settle();
      results.push(result);
      const label = {
        io: "conversion's I/O alone",
        convert: `convert + verify, ${workers} worker${workers === 1 ? "" : "s"}`,
        verify: `weights verify, ${workers} worker${workers === 1 ? "" : "s"}`,
      }[arm] as string;
      const rate = result.sourceBytes / 2 ** 30 / result.seconds;
      process.stdout.write(
        `${label.padEnd(34)} ${result.seconds.toFixed(2).padStart(7)} s  ${rate.toFixed(3)} GiB/s of source  ` +
          `${result.cpuSeconds.toFixed(1)} CPU s (${result.systemSeconds.toFixed(1)} system)  peak RSS ${(result.maxRssBytes / 2 ** 20).toFixed(0)} MiB\n`,
      );
    }
    // Each side's seconds over the arms picked (both halves: each side's total, so one slow arm counts once).
    const seconds = (arm: string, workers: number, picked: number[]) =>
      picked.reduce(
        (t, k) =>
          order[k]?.arm === arm && order[k]?.workers === workers ? t + (results[k]?.seconds ?? 0) : t,
        0,
      );
    const halves = [
      { name: "half 1", picked: half.map((_, k) => k) },
      { name: "half 2", picked: half.map((_, k) => half.length + k) },
      { name: "both halves", picked: order.map((_, k) => k) },
    ];
    for (const { name, picked } of halves) {
      const io = seconds("io", 0, picked);
      const [convert1, convert2] = [seconds("convert", 1, picked), seconds("convert", 2, picked)];
      const convertDefault = defaultCount === 1 ? convert1 : convert2;
      const verify = seconds("verify", defaultCount, picked);
      process.stdout.write(
        `${name}: convert + verify (default ${defaultCount} worker${defaultCount === 1 ? "" : "s"}) at ${(io / convertDefault).toFixed(2)}x of its I/O alone; ` +
          `2 workers vs 1 ${(convert1 / convert2).toFixed(2)}x; weights verify vs the conversion ${(convertDefault / verify).toFixed(2)}x\n`,
      );
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
