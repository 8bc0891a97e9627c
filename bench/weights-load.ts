/**
 * Weight load time of a re-laid-out checkpoint against the safetensors load of its source, on a
 * bench-size checkpoint of Beam's family (the MiniMax-M3 family of its tiny reference config, MXFP4
 * experts, scaled up to more than 1 GiB), trials interleaved in ABBA blocks in one run. Arm b is
 * `--layout packed` (default), the packed load format (`bringup weights pack`), or `--layout
 * halves`, the experts' MXFP4 codes re-laid out in halves order (`bringup weights convert --to
 * mxfp4 --layout halves`, DeepSeek-V4.1-Flash's weights gate), which the engine's fused decode reads
 * with two shuffles fewer per block of 32. With `--decode N` each trial also decodes N greedy tokens
 * after loading (one stream, a fixed 32-token prompt) and reports decode tokens per second: the
 * first token (prefill) is left out.
 *
 *   npx tsx bench/weights-load.ts [--layout packed|halves] [--blocks 4] [--ranks 2] [--layers 8]
 *     [--cache cold|warm] [--decode 0] [--threads 1] [--record]
 *
 * A trial is one `loadModel(dir)` (config, tokenizer, every weight into the kernels' memory, the
 * model built), timed inside a fresh child process so each starts with an empty WebAssembly arena.
 * Page cache: with `--cache cold` (default) every file of the arm's directory is evicted before its
 * trial (`dd iflag=nocache count=0`, posix_fadvise DONTNEED, which needs no root) and `fincore`
 * confirms none of it stays resident, so both arms read from disk; with `--cache warm` each file is
 * read once before the trial, so both read from memory. Before the trials, `weights verify`'s
 * verifyPacked proves the packed directory holds exactly the safetensors values. Prints each arm's
 * median and the speed-up (safetensors time over packed time) with its 95% interval; `--record`
 * keeps it as a same-pod-ab record in .bringup/results/<port>/ (gitignored: beam-1.0-501b-a23b for
 * packed, deepseek-v4.1-flash for halves, and a decode record beside the load one), which
 * `bringup records publish <port>` adds to the port. With halves, weights verify's
 * verifyCheckpoints proves the re-laid-out directory holds the source's values.
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
import { Engine, loadModel, readCorpus } from "../src/engine/index.js";
import { minimaxTinyModel } from "../src/engine/models/minimax-m3.js";
import { writeTinyModel } from "../src/engine/tiny/write.js";
import { convertWeights, packCheckpoint, verifyCheckpoints, verifyPacked } from "../src/formats/index.js";
import { appendRecord, localServerFingerprint } from "../src/records/index.js";
import { benchArgs } from "./args.js";

const PORTS = { packed: "beam-1.0-501b-a23b", halves: "deepseek-v4.1-flash" } as const;
const FAMILY_PORT = PORTS.packed;
const ROOT = join(import.meta.dirname, "..");

// A child times one load (and, given a token count, that many greedy decode steps) and prints them.
if (process.argv[2] === "--child") {
  const started = performance.now();
  const model = await loadModel(process.argv[3] as string);
  const seconds = (performance.now() - started) / 1000;
  const [steps, threads] = [Number(process.argv[4]), Number(process.argv[5])];
  let tokS: number | undefined;
  if (steps > 0) {
    const engine = new Engine(model, { threads, maxNumSeqs: 1 });
    const prompt = Array.from({ length: 32 }, (_, i) => (i * 7 + 3) % 500);
    let first = 0;
    let count = 0;
    for await (const out of engine.submit({
      promptTokenIds: prompt,
      maxTokens: steps + 1,
      sampling: { temperature: 0 },
      ignoreEos: true,
    })) {
      if (out.token === undefined) continue;
      count += 1;
      if (count === 1) first = performance.now();
    }
    tokS = (count - 1) / ((performance.now() - first) / 1000);
    await engine.close();
  }
  process.stdout.write(`${JSON.stringify({ seconds, tokS, parameters: model.numParameters })}\n`);
  process.exit(0);
}

const args = benchArgs(import.meta.url, {
  layout: { type: "string", default: "packed" },
  decode: { type: "string", default: "0" },
  threads: { type: "string", default: "1" },
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
const layout = args.layout;
if (layout !== "packed" && layout !== "halves") throw new Error(`--layout ${layout}: give packed or halves`);
const PORT = PORTS[layout];
const decode = Number(args.decode);
const threads = Number(args.threads);

// Beam's tiny reference config at bench size: wider layers and more experts, same family and names.
const portYaml = parse(await readFile(join(ROOT, "ports", FAMILY_PORT, "port.yaml"), "utf8")) as {
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
const packedDir = join(work, layout === "packed" ? `packed-${ranks}` : "halves");
if (!(await exists(safetensorsDir))) {
  console.log(`writing the bench-size checkpoint to ${safetensorsDir} ...`);
  await writeTinyModel(safetensorsDir, minimaxTinyModel(config, await readCorpus(), { seed: 0 }));
}
if (!(await exists(packedDir))) {
  console.log(
    layout === "packed"
      ? `packing it for ${ranks} ranks into ${packedDir} ...`
      : `re-laying out its MXFP4 experts in halves order into ${packedDir} ...`,
  );
  if (layout === "packed") await packCheckpoint(safetensorsDir, packedDir, ranks);
  else await convertWeights(safetensorsDir, packedDir, { to: "mxfp4", layout: "halves", workers: 1 });
}
const verified =
  layout === "packed"
    ? await verifyPacked(safetensorsDir, packedDir)
    : await verifyCheckpoints(safetensorsDir, packedDir, { workers: 1 });
if (!verified.ok) throw new Error(`${packedDir} does not hold the safetensors values: not comparable`);
const bName = layout === "packed" ? `packed load (${ranks} ranks)` : "MXFP4 experts in halves order";

const filesOf = async (dir: string) => (await readdir(dir)).map((n) => join(dir, n));
const bytesOf = (dir: string) =>
  Number(execFileSync("du", ["-sb", dir], { encoding: "utf8" }).split("\t")[0]);
console.log(
  `checkpoint ${(bytesOf(safetensorsDir) / 2 ** 30).toFixed(2)} GiB safetensors, ${(bytesOf(packedDir) / 2 ** 30).toFixed(2)} GiB ${bName}; ${verified.weights.length} tensors verified identical`,
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

interface Trial {
  readonly seconds: number;
  readonly tokS?: number;
}

function trial(dir: string): Trial {
  const child = spawnSync(
    process.execPath,
    [...process.execArgv, import.meta.filename, "--child", dir, String(decode), String(threads)],
    { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] },
  );
  if (child.status !== 0) throw new Error(`loading ${dir} failed (exit ${child.status})`);
  return JSON.parse(child.stdout.trim().split("\n").at(-1) as string) as Trial;
}

const arms = {
  a: { name: "safetensors load", dir: safetensorsDir },
  b: { name: bName, dir: packedDir },
};
const trials: Record<"a" | "b", Trial[][]> = { a: [], b: [] };
const loads: number[] = [];
for (let block = 0; block < blocks; block++) {
  trials.a.push([]);
  trials.b.push([]);
  for (const key of ["a", "b", "b", "a"] as const) {
    await prepareCache(arms[key].dir);
    const t = trial(arms[key].dir);
    (trials[key][block] as Trial[]).push(t);
    loads.push(loadavg()[0] as number);
    const tokS = t.tokS === undefined ? "" : `, decode ${t.tokS.toFixed(2)} tok/s`;
    console.log(`block ${block + 1} ${arms[key].name}: load ${t.seconds.toFixed(3)} s${tokS}`);
  }
}

const median = (v: readonly number[]) => {
  const s = [...v].sort((x, y) => x - y);
  return ((s[(s.length - 1) >> 1] as number) + (s[s.length >> 1] as number)) / 2;
};
const sum = (v: readonly number[]) => v.reduce((s, x) => s + x, 0);
const load = `load average ${Math.min(...loads).toFixed(1)} to ${Math.max(...loads).toFixed(1)}`;
const fingerprint = localServerFingerprint({
  software: { model: `beam bench-size minimax_m3, ${layers} layers, ${bytesOf(safetensorsDir)} bytes` },
  server_flags: [`--layout=${layout}`, `--ranks=${ranks}`, `--cache=${cache}`, `--threads=${threads}`],
  tool_version: toolVersion(),
});
const command = `npx tsx bench/weights-load.ts --layout ${layout} --blocks ${blocks} --ranks ${ranks} --layers ${layers} --cache ${cache} --decode ${decode} --threads ${threads} --record`;
const proof = `${layout === "packed" ? "packed directory proven identical by value (verifyPacked" : "re-laid-out directory proven identical by value (verifyCheckpoints"}, ${verified.weights.length} tensors)`;

/**
 * Prints arm b's speed-up in `what` (b over a where higher is better, a over b where lower is) with
 * its 95% interval, and records it with `--record`.
 */
async function report(
  what: {
    metric: string;
    unit: "s" | "tok/s";
    better: "lower" | "higher";
    id: string;
    label: string;
    context: string;
  },
  value: (t: Trial) => number,
): Promise<void> {
  const samples = (key: "a" | "b") => trials[key].map((block) => block.map(value));
  const [a, b] = [samples("a"), samples("b")];
  const faster = what.better === "lower" ? { over: b, under: a } : { over: a, under: b };
  const interval = blockedRatioInterval(
    faster.over.map((x, i) => ({ a: x, b: faster.under[i] as number[] })),
  );
  console.log(
    `\n${what.metric}: ${arms.a.name} median ${median(a.flat()).toFixed(3)} ${what.unit}; ${arms.b.name} median ${median(b.flat()).toFixed(3)} ${what.unit}`,
  );
  console.log(
    `speed-up ${interval.estimate.toFixed(3)}x (95% interval ${interval.low.toFixed(3)} to ${interval.high.toFixed(3)}), ${blocks} ABBA blocks, page cache ${cache}, ${load}`,
  );
  if (!args.record) return;
  const perBlock = faster.under.map((u, i) => sum(u) / sum(faster.over[i] as number[]));
  const record = measuredRecord({
    port: PORT,
    id: what.id,
    metric: what.metric,
    label: what.label,
    unit: what.unit,
    method: "same-pod-ab",
    context: `${blocks} ABBA blocks, one loadModel per trial in a fresh process; ${what.context}; ${proof}; ${load} (bench/weights-load.ts)`,
    command,
    arms: (["a", "b"] as const).map((key, i) => ({
      name: arms[key].name,
      samples: (i === 0 ? a : b).flat(),
      fingerprint,
    })),
    comparison: {
      figure: { shape: "point", value: Number(interval.estimate.toPrecision(4)) },
      ci95: [Number(interval.low.toPrecision(4)), Number(interval.high.toPrecision(4))],
      cv: Number(cv(perBlock).toPrecision(4)),
      better: what.better,
    },
  });
  const saved = await appendRecord(localResultsDir(ROOT, PORT), record);
  console.log(`recorded ${saved.id}`);
}

const size = `${(bytesOf(safetensorsDir) / 2 ** 30).toFixed(2)} GiB`;
const caching =
  cache === "cold"
    ? "page cache dropped for the arm's files before each trial (dd iflag=nocache, checked with fincore)"
    : "page cache warm: each file read once before the trial";
await report(
  {
    metric: "weight_load_time",
    unit: "s",
    better: "lower",
    id: layout === "packed" ? `weight-load-packed-ab-${cache}` : `weight-load-halves-ab-${cache}`,
    label: `weight load time of a ${size} bench-size checkpoint with MXFP4 experts (MiniMax-M3 family), ${bName} against the safetensors source, bit-identical weights`,
    context: caching,
  },
  (t) => t.seconds,
);
if (decode > 0) {
  await report(
    {
      metric: "decode_tok_s",
      unit: "tok/s",
      better: "higher",
      id: `decode-${layout}-vs-source-ab`,
      label: `decode tokens per second of a ${size} bench-size checkpoint with MXFP4 experts (MiniMax-M3 family), ${bName} against the source, one stream`,
      context: `after the load, ${decode} greedy decode steps of one stream from a 32-token prompt on ${threads} matmul thread(s), the first token (prefill) left out`,
    },
    (t) => t.tokS as number,
  );
}
