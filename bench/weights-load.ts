/**
 * Weight load time of the packed load format (`bringup weights pack`) against the safetensors load,
 * on a bench-size checkpoint of Beam's family (the MiniMax-M3 family of its tiny reference config,
 * scaled up to more than 1 GiB), trials interleaved in ABBA blocks in one run.
 *
 *   npx tsx bench/weights-load.ts [--blocks 4] [--ranks 2] [--layers 8] [--cache cold|warm] [--record]
 *
 * A trial is one `loadModel(dir)` (config, tokenizer, every weight into the kernels' memory, the
 * model built), timed inside a fresh child process so each starts with an empty WebAssembly arena.
 * Page cache: with `--cache cold` (default) every file of the arm's directory is evicted before its
 * trial (`dd iflag=nocache count=0`, posix_fadvise DONTNEED, which needs no root) and `fincore`
 * confirms none of it stays resident, so both arms read from disk; with `--cache warm` each file is
 * read once before the trial, so both read from memory. Before the trials, `weights verify`'s
 * verifyPacked proves the packed directory holds exactly the safetensors values. Prints each arm's
 * median and the speed-up (safetensors time over packed time) with its 95% interval; `--record`
 * keeps it as a same-pod-ab record in .bringup/results/beam-1.0-501b-a23b/ (gitignored), which
 * `bringup records publish beam-1.0-501b-a23b` adds to the port.
 *
 * The checkpoint and its pack are made once and kept in .cache/bringup/bench-weights-load/.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { loadavg } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { blockedRatioInterval, cv, measuredRecord, toolVersion } from "../src/bench/index.js";
import { localResultsDir } from "../src/catalog/index.js";
import { exists } from "../src/common/atomic-write.js";
import { loadModel, readCorpus } from "../src/engine/index.js";
import { minimaxTinyModel } from "../src/engine/models/minimax-m3.js";
import { writeTinyModel } from "../src/engine/tiny/write.js";
import { packCheckpoint, verifyPacked } from "../src/formats/index.js";
import { appendRecord, localServerFingerprint } from "../src/records/index.js";
import { benchArgs } from "./args.js";

const PORT = "beam-1.0-501b-a23b";
const ROOT = join(import.meta.dirname, "..");

// A child times one load and prints the seconds.
if (process.argv[2] === "--child") {
  const started = performance.now();
  const model = await loadModel(process.argv[3] as string);
  const seconds = (performance.now() - started) / 1000;
  process.stdout.write(`${JSON.stringify({ seconds, parameters: model.numParameters })}\n`);
  process.exit(0);
}

const args = benchArgs(import.meta.url, {
  blocks: { type: "string", default: "4" },
  ranks: { type: "string", default: "2" },
  layers: { type: "string", default: "8" },
  cache: { type: "string", default: "cold" },
  record: { type: "boolean", default: false },
});
const blocks = Number(args.blocks);
const ranks = Number(args.ranks);
const cache = args.cache;
if (cache !== "cold" && cache !== "warm") throw new Error(`--cache ${cache}: give cold or warm`);

// Beam's tiny reference config at bench size: wider layers and more experts, same family and names.
const portYaml = parse(await readFile(join(ROOT, "ports", PORT, "port.yaml"), "utf8")) as {
  reference: { config: Record<string, unknown> };
};
const layers = Number(args.layers);
const config = {
  ...portYaml.reference.config,
  hidden_size: 2048,
  num_attention_heads: 16,
  num_key_value_heads: 4,
  head_dim: 128,
  num_local_experts: 16,
  intermediate_size: 2048,
  num_hidden_layers: layers,
  layer_types: Array.from({ length: layers }, (_, i) =>
    i % 2 === 0 ? "sliding_attention" : "full_attention",
  ),
};
const work = join(ROOT, ".cache", "bringup", "bench-weights-load", `layers-${layers}`);
const safetensorsDir = join(work, "safetensors");
const packedDir = join(work, `packed-${ranks}`);
if (!(await exists(safetensorsDir))) {
  console.log(`writing the bench-size checkpoint to ${safetensorsDir} ...`);
  await writeTinyModel(safetensorsDir, minimaxTinyModel(config, await readCorpus(), { seed: 0 }));
}
if (!(await exists(packedDir))) {
  console.log(`packing it for ${ranks} ranks into ${packedDir} ...`);
  await packCheckpoint(safetensorsDir, packedDir, ranks);
}
const verified = await verifyPacked(safetensorsDir, packedDir);
if (!verified.ok) throw new Error(`${packedDir} does not hold the safetensors values: not comparable`);

const filesOf = async (dir: string) => (await readdir(dir)).map((n) => join(dir, n));
const bytesOf = (dir: string) =>
  Number(execFileSync("du", ["-sb", dir], { encoding: "utf8" }).split("\t")[0]);
console.log(
  `checkpoint ${(bytesOf(safetensorsDir) / 2 ** 30).toFixed(2)} GiB safetensors, ${(bytesOf(packedDir) / 2 ** 30).toFixed(2)} GiB packed (${ranks} ranks); ${verified.weights.length} tensors verified identical`,
);

/** Evicts (cold) or reads in (warm) every file of `dir`; cold checks none stays resident. */
async function prepareCache(dir: string): Promise<void> {
  for (const file of await filesOf(dir)) {
    if (cache === "warm") {
      execFileSync("cat", [file], { stdio: ["ignore", "ignore", "inherit"] });
      continue;
    }
    execFileSync("dd", [`if=${file}`, "iflag=nocache", "count=0", "status=none"]);
    const resident = execFileSync("fincore", ["--bytes", "--noheadings", "--output", "RES", file], {
      encoding: "utf8",
    }).trim();
    if (Number(resident) > 0) throw new Error(`${file}: ${resident} bytes still cached after eviction`);
  }
}

function loadSeconds(dir: string): number {
  const child = spawnSync(process.execPath, [...process.execArgv, import.meta.filename, "--child", dir], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  if (child.status !== 0) throw new Error(`loading ${dir} failed (exit ${child.status})`);
  return (JSON.parse(child.stdout.trim().split("\n").at(-1) as string) as { seconds: number }).seconds;
}

const arms = {
  a: { name: "safetensors load", dir: safetensorsDir },
  b: { name: "packed load", dir: packedDir },
};
const times: Record<"a" | "b", number[][]> = { a: [], b: [] };
const loads: number[] = [];
for (let block = 0; block < blocks; block++) {
  times.a.push([]);
  times.b.push([]);
  for (const key of ["a", "b", "b", "a"] as const) {
    await prepareCache(arms[key].dir);
    const seconds = loadSeconds(arms[key].dir);
    (times[key][block] as number[]).push(seconds);
    loads.push(loadavg()[0] as number);
    console.log(`block ${block + 1} ${arms[key].name}: ${seconds.toFixed(3)} s`);
  }
}

const median = (v: readonly number[]) => {
  const s = [...v].sort((x, y) => x - y);
  return ((s[(s.length - 1) >> 1] as number) + (s[s.length >> 1] as number)) / 2;
};
// Lower is better: the interval is of safetensors time over packed time, the packed load's speed-up.
const interval = blockedRatioInterval(times.a.map((a, i) => ({ a: times.b[i] as number[], b: a })));
const load = `load average ${Math.min(...loads).toFixed(1)} to ${Math.max(...loads).toFixed(1)}`;
console.log(
  `\n${arms.a.name}: median ${median(times.a.flat()).toFixed(3)} s; ${arms.b.name}: median ${median(times.b.flat()).toFixed(3)} s`,
);
console.log(
  `speed-up ${interval.estimate.toFixed(2)}x (95% interval ${interval.low.toFixed(2)} to ${interval.high.toFixed(2)}), ${blocks} ABBA blocks, page cache ${cache}, ${load}`,
);

if (args.record) {
  const fingerprint = localServerFingerprint({
    software: { model: `beam bench-size minimax_m3, ${layers} layers, ${bytesOf(safetensorsDir)} bytes` },
    server_flags: [`--ranks=${ranks}`, `--cache=${cache}`],
    tool_version: toolVersion(),
  });
  const sum = (v: readonly number[]) => v.reduce((s, x) => s + x, 0);
  const perBlock = times.a.map((a, i) => sum(a) / sum(times.b[i] as number[]));
  const record = measuredRecord({
    port: PORT,
    id: `weight-load-packed-ab-${cache}`,
    metric: "weight_load_time",
    label: `weight load time of a ${(bytesOf(safetensorsDir) / 2 ** 30).toFixed(2)} GiB bench-size checkpoint of the family, packed load (${ranks} ranks) against safetensors, bit-identical weights`,
    unit: "s",
    method: "same-pod-ab",
    context: `${blocks} ABBA blocks, one loadModel per trial in a fresh process; page cache ${cache === "cold" ? "dropped for the arm's files before each trial (dd iflag=nocache, checked with fincore)" : "warm: each file read once before the trial"}; packed directory proven identical by value (verifyPacked, ${verified.weights.length} tensors); ${load} (bench/weights-load.ts)`,
    command: `npx tsx bench/weights-load.ts --blocks ${blocks} --ranks ${ranks} --layers ${layers} --cache ${cache} --record`,
    arms: (["a", "b"] as const).map((key) => ({
      name: arms[key].name,
      samples: times[key].flat(),
      fingerprint,
    })),
    comparison: {
      figure: { shape: "point", value: Number(interval.estimate.toPrecision(4)) },
      ci95: [Number(interval.low.toPrecision(4)), Number(interval.high.toPrecision(4))],
      cv: Number(cv(perBlock).toPrecision(4)),
      better: "lower",
    },
  });
  const saved = await appendRecord(localResultsDir(ROOT, PORT), record);
  console.log(`\nrecorded ${saved.id}`);
}
