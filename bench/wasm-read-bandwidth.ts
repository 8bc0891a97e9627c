/**
 * How fast WebAssembly reads memory here, against the memcmp reader the decode roofline uses
 * (bench/memory-bandwidth.ts), in one process, interleaved round by round: is batch-1 decode short
 * of the roofline because wasm cannot read as fast as native code, or because of the engine? The
 * readers (bench/wasm-bandwidth.ts) stream --mb MB between the threads; the tile's weights are
 * read as rows of K = --k. Each round prints memcmp's reading and each reader's, best/median of
 * --passes passes; the end gives each reader's median over rounds against memcmp's.
 *
 *   npx tsx bench/wasm-read-bandwidth.ts [--threads 2] [--mb 400] [--rounds 4] [--passes 5] [--k 768]
 */
import { median } from "simple-statistics";
import { benchArgs } from "./args.js";
import { measureBandwidth } from "./memory-bandwidth.js";
import { WASM_READERS, type WasmReader, WasmReaders } from "./wasm-bandwidth.js";

const args = benchArgs(import.meta.url, {
  threads: { type: "string", default: "2" },
  mb: { type: "string", default: "400" },
  rounds: { type: "string", default: "4" },
  passes: { type: "string", default: "5" },
  k: { type: "string", default: "768" },
});
const threads = Number(args.threads);
const readers = await WasmReaders.start(threads, Number(args.mb), Number(args.k));
const gb = (b: number) => (b / 1e9).toFixed(1);
const byReader = new Map<WasmReader | "memcmp", number[]>();
const keep = (name: WasmReader | "memcmp", value: number) =>
  byReader.set(name, [...(byReader.get(name) ?? []), value]);
process.stdout.write(
  `${threads} thread(s), ${gb(threads * readers.share)} GB a pass (${gb(readers.share)} GB each), tile K=${args.k}; GB/s best/median of ${args.passes} passes\n`,
);
for (let round = 1; round <= Number(args.rounds); round++) {
  const memcmp = await measureBandwidth(threads);
  const line = [`round ${round}: memcmp ${gb(memcmp.peak)}/${gb(median(memcmp.passes))}`];
  keep("memcmp", median(memcmp.passes));
  for (const reader of WASM_READERS) {
    const { peak, passes } = await readers.measure(reader, Number(args.passes));
    line.push(`${reader} ${gb(peak)}/${gb(median(passes))}`);
    keep(reader, median(passes));
  }
  process.stdout.write(`${line.join(", ")}\n`);
}
const memcmpMedian = median(byReader.get("memcmp") as number[]);
const summary = [...byReader].map(
  ([name, values]) => `${name} ${gb(median(values))} (${(median(values) / memcmpMedian).toFixed(2)}x memcmp)`,
);
process.stdout.write(`medians over rounds, GB/s: ${summary.join(", ")}\n`);
await readers.close();
