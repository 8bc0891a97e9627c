import { spawn } from "node:child_process";
import { realpathSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, open, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INDEX_FILE, MAX_TENSORS, PIECE_BYTES } from "../../formats/index.js";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));
/** The bound the issue sets: 512 MiB, plus one tensor's chunk (a conversion's 16 MiB of source). */
const BOUND = 512 * 2 ** 20;
const CHUNK = 16 * 2 ** 20;

let work: string;
let main: string;

/**
 * The CLI as it runs from this tree, bundled by esbuild with its two worker modules beside it (the
 * kernels' .wasm too): a real process whose memory is the CLI's own, where tsx's loader would add
 * some 400 MB to every run.
 */
async function bundleCli(dir: string): Promise<string> {
  await build({
    entryPoints: ["src/cli/main.ts", "src/formats/convert-worker.ts", "src/formats/verify-worker.ts"].map(
      (p) => join(REPO, p),
    ),
    bundle: true,
    platform: "node",
    format: "esm",
    outdir: dir,
    entryNames: "[name]",
    packages: "external",
    logLevel: "error",
  });
  // Each module finds its binaries relative to itself: the formats' in ./wasm/, the engine
  // kernels' in ./<op>/; in the bundle every module is main.js, so both trees go beside it.
  const kernels = join(REPO, "src/engine/kernels");
  const ops = (await readdir(kernels, { withFileTypes: true })).filter((e) => e.isDirectory());
  const binaries: [string, string][] = [
    ["src/formats/wasm", "wasm"],
    ...ops.map((op): [string, string] => [`src/engine/kernels/${op.name}`, op.name]),
  ];
  for (const [from, to] of binaries) {
    await mkdir(join(dir, to), { recursive: true });
    for (const name of await readdir(join(REPO, from)))
      if (name.endsWith(".wasm")) await copyFile(join(REPO, from, name), join(dir, to, name));
  }
  await symlink(realpathSync(join(REPO, "node_modules")), join(dir, "node_modules"));
  return join(dir, "main.js");
}

/** A safetensors file of `header` and `dataBytes` zero bytes, written sparse. */
async function safetensors(path: string, header: string, dataBytes = 0): Promise<void> {
  const text = Buffer.from(header);
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(text.length));
  const file = await open(path, "w");
  try {
    await file.write(prefix);
    await file.write(text);
    await file.truncate(8 + text.length + dataBytes);
  } finally {
    await file.close();
  }
}

/** A header of empty tensors `layer.<i>.x` for i in [from, to). */
function emptyTensors(from: number, to: number): string {
  const entries = Array.from(
    { length: to - from },
    (_, k) => `"layer.${from + k}.x":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}`,
  );
  return `{${entries.join(",")}}`;
}

/** Runs `bringup weights ...`; returns its exit code, stderr and peak resident memory in bytes. */
function weights(args: string[]): Promise<{ code: number | null; stderr: string; peak: number }> {
  // Reported by the process itself at exit: worker threads count, as they share its memory.
  const report =
    'process.on("exit", () => process.stderr.write("\\npeak-rss " + process.resourceUsage().maxRSS * 1024 + "\\n"));';
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--import", `data:text/javascript,${encodeURIComponent(report)}`, main, "weights", ...args],
      // stdout is a pipe read as it comes, as a shell's would be, and dropped.
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let stderr = "";
    child.stdout.resume();
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => {
      const peak = Number(/peak-rss (\d+)/.exec(stderr)?.[1] ?? Number.NaN);
      resolve({ code, stderr, peak });
    });
  });
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "bringup-weights-memory-"));
  main = await bundleCli(join(work, "cli"));
  // 1.4 million empty tensors in a 91 MB header, as the issue crafted them.
  const entries = Array.from(
    { length: 1_400_000 },
    (_, i) => `"layer.${i}.x":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}`,
  );
  await safetensors(join(work, "many.safetensors"), `{${entries.join(",")}}`);
  // As many empty tensors as a checkpoint may hold: in one file, and in four shards with an index.
  await safetensors(join(work, "cap.safetensors"), emptyTensors(0, MAX_TENSORS));
  await mkdir(join(work, "cap-sharded"));
  const weightMap: Record<string, string> = {};
  for (let s = 0; s < 4; s += 1) {
    const [from, to] = [(s * MAX_TENSORS) / 4, ((s + 1) * MAX_TENSORS) / 4];
    const shard = `model-0000${s + 1}-of-00004.safetensors`;
    await safetensors(join(work, "cap-sharded", shard), emptyTensors(from, to));
    for (let i = from; i < to; i += 1) weightMap[`layer.${i}.x`] = shard;
  }
  await writeFile(join(work, "cap-sharded", INDEX_FILE), JSON.stringify({ weight_map: weightMap }));
  // An index naming 4.5 million tensors in 62 MB, under the size an index may be.
  await mkdir(join(work, "long-index"));
  const names = Array.from({ length: 4_500_000 }, (_, i) => `"${i}":"m"`);
  await writeFile(join(work, "long-index", INDEX_FILE), `{"weight_map":{${names.join(",")}}}`);
  // One tensor whose name is 99 MB.
  await safetensors(
    join(work, "long.safetensors"),
    `{"${"n".repeat(99_000_000)}":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}`,
  );
  // One 1-D BF16 tensor of 192 MiB: decoded whole to float32, each side would be 384 MiB.
  const bytes = 192 * 2 ** 20;
  await safetensors(
    join(work, "long-row.safetensors"),
    `{"w":{"dtype":"BF16","shape":[${bytes / 2}],"data_offsets":[0,${bytes}]}}`,
    bytes,
  );
}, 120_000);

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe("bringup weights keeps its memory bounded whatever the input", () => {
  it("refuses a header of 1.4 million empty tensors, in inspect and verify", async () => {
    const file = join(work, "many.safetensors");
    for (const args of [
      ["inspect", file],
      ["verify", file, file],
    ]) {
      const run = await weights(args);
      expect(run.stderr).toMatch(/lists more than 262144 tensors.*\[SAFETENSORS_TOO_MANY_TENSORS\]/);
      expect(run.code).toBe(2);
      expect(run.peak).toBeLessThan(BOUND);
    }
  }, 120_000);

  it.each([
    ["inspect --json of one file", ["inspect", "cap.safetensors", "--json"]],
    ["inspect of a sharded directory", ["inspect", "cap-sharded"]],
    ["verify --json of a file against shards", ["verify", "cap.safetensors", "cap-sharded", "--json"]],
    ["verify of shards against a file", ["verify", "cap-sharded", "cap.safetensors"]],
  ])(
    "reports on 262,144 tensors, the most a checkpoint may hold: %s",
    async (_, args) => {
      const run = await weights(args.map((a) => (a.startsWith("cap") ? join(work, a) : a)));
      expect(run.code, run.stderr).toBe(0);
      expect(run.peak).toBeLessThan(BOUND);
    },
    300_000,
  );

  it.each([
    ["--to bf16 of one file", "cap.safetensors", "bf16", []],
    ["--to fp8 of a sharded directory", "cap-sharded", "fp8", []],
    ["--to mxfp4 of one file", "cap.safetensors", "mxfp4", []],
    ["--to fp8 of one file, without the proof", "cap.safetensors", "fp8", ["--no-verify"]],
  ])(
    "converts 262,144 empty tensors (by default proving the output exact by reading it back): %s",
    async (_, from, to, extra) => {
      const out = join(work, `cap-${to}-${from.replace(".", "-")}`);
      const run = await weights(["convert", join(work, from), out, "--to", to, "--no-progress", ...extra]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.peak).toBeLessThan(BOUND + CHUNK);
      await rm(out, { recursive: true, force: true });
    },
    300_000,
  );

  it("refuses an index of 4.5 million names before opening a shard", async () => {
    const run = await weights(["inspect", join(work, "long-index")]);
    expect(run.stderr).toMatch(/weight_map lists more than 262144 tensors.*\[BAD_INDEX\]/);
    expect(run.code).toBe(2);
    expect(run.peak).toBeLessThan(BOUND);
  }, 60_000);

  it("refuses a 99 MB tensor name before building it", async () => {
    const run = await weights(["inspect", join(work, "long.safetensors")]);
    expect(run.stderr).toMatch(/a string longer than 4096 bytes.*\[SAFETENSORS_BAD_HEADER\]/);
    expect(run.code).toBe(2);
    expect(run.peak).toBeLessThan(BOUND);
  }, 60_000);

  it("re-lays out a 320 MiB MXFP4 expert stack in halves order in bounded pieces, proving it", async () => {
    // 16 experts of [5120, 8192], all zero codes and scales (2^-127).
    const [codes, scales] = [16 * 5120 * 256 * 16, 16 * 5120 * 256];
    const file = join(work, "experts.safetensors");
    await safetensors(
      file,
      JSON.stringify({
        "x.experts.down_proj_blocks": { dtype: "U8", shape: [16, 5120, 256, 16], data_offsets: [0, codes] },
        "x.experts.down_proj_scales": {
          dtype: "U8",
          shape: [16, 5120, 256],
          data_offsets: [codes, codes + scales],
        },
      }),
      codes + scales,
    );
    const out = join(work, "experts-halves");
    const run = await weights(["convert", file, out, "--to", "mxfp4", "--layout", "halves", "--no-progress"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.peak).toBeLessThan(BOUND + CHUNK);
    expect((await readdir(out)).sort()).toEqual(["config.json", "experts.safetensors"]);
    await rm(out, { recursive: true, force: true });
  }, 300_000);

  it("converts and verifies one 192 MiB row in bounded chunks", async () => {
    const out = join(work, "long-row-out");
    const converted = await weights([
      "convert",
      join(work, "long-row.safetensors"),
      out,
      "--to",
      "fp8",
      "--workers",
      "2",
      "--no-progress",
    ]);
    expect(converted.code, converted.stderr).toBe(0);
    expect(converted.peak).toBeLessThan(BOUND + CHUNK);
    const verified = await weights(["verify", join(work, "long-row.safetensors"), out]);
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.peak).toBeLessThan(BOUND + CHUNK);
    expect(PIECE_BYTES).toBeLessThan(CHUNK);
  }, 180_000);
});
