/**
 * Benchmark: decoding quantized weights to float32, the scalar loops against the WebAssembly SIMD
 * decoders, in one process on one thread. These decoders are most of what `bringup weights verify`
 * and the exactness proof of `weights convert` spend their time on.
 *
 *   npx tsx bench/weights-decode.ts [--mib 16] [--rounds 4]
 *
 * Data: --mib MiB of MXFP4 blocks (random bytes, scales in 8 binades) and as many FP8 E4M3 codes
 * with 128x128 tile scales, rows of 2048, generated in memory. For each format the arms are the
 * scalar loop (what runs without WebAssembly SIMD), the SIMD kernel on bytes already in its memory
 * (DecodeSpace, as readLogicalRows's RowBuffers, whose reads land there), and for MXFP4 also the
 * decoder copying arrays through its memory (dequantizeMxfp4). Each round
 * runs the arms in order and then backwards, so drift hits every arm alike; the median ns per
 * element and each arm's speed-up over the scalar loop are printed. All arms' values are checked
 * bit for bit against the scalar loop's first.
 */

import { randomFillSync } from "node:crypto";
import { SimdDecoder } from "../src/formats/decode-simd.js";
import { decodeScaledRow } from "../src/formats/logical.js";
import { dequantizeMxfp4Scalar } from "../src/formats/mxfp4.js";
import { benchArgs } from "./args.js";

const args = benchArgs(import.meta.url, {
  mib: { type: "string", default: "16" },
  rounds: { type: "string", default: "4" },
});
const COLS = 2048;
const TILE = 128;
const rows = Math.max(TILE, Math.floor((Number(args.mib) * 2 ** 20) / (COLS / 2) / TILE) * TILE);
const elements = rows * COLS;

const blocks = randomFillSync(new Uint8Array(elements / 2));
const scales = randomFillSync(new Uint8Array(elements / 32)).map((s) => 120 + (s & 7));
// No NaN codes: the arms are checked bit for bit, and NaN payloads are not part of the promise.
const codes = randomFillSync(new Uint8Array(elements)).map((c) => ((c & 0x7f) === 0x7f ? c ^ 1 : c));
const tileScales = Float32Array.from(
  { length: (rows / TILE) * (COLS / TILE) },
  (_, k) => 2 ** ((k % 13) - 6),
);

const decoder = SimdDecoder.create();
if (decoder === undefined) throw new Error("this runtime has no WebAssembly SIMD: nothing to compare");
const out = new Float32Array(elements);

/** The FP8 scale index of a row's first tile. */
const tileRow = (row: number) => Math.floor(row / TILE) * (COLS / TILE);

type Arm = { name: string; run: () => Float32Array };

/** A decoder of its own with the bytes already in its memory, as a reader's bytes land there. */
function inPlace(scaleBytes: Uint8Array, codeBytes: Uint8Array) {
  const space = (SimdDecoder.create() as SimdDecoder).space(scaleBytes.length, codeBytes.length, elements);
  space.scales.set(scaleBytes);
  space.codes.set(codeBytes);
  return space;
}

function mxfp4Arms(): Arm[] {
  const space = inPlace(scales, blocks);
  return [
    {
      name: "MXFP4 scalar",
      run: () => {
        dequantizeMxfp4Scalar(blocks, scales, out);
        return out;
      },
    },
    {
      name: "MXFP4 SIMD, copied through",
      run: () => {
        decoder?.mxfp4(blocks, scales, out);
        return out;
      },
    },
    {
      name: "MXFP4 SIMD, in place",
      run: () => {
        space.mxfp4(scales.length);
        return space.values;
      },
    },
  ];
}

function fp8Arms(): Arm[] {
  const space = inPlace(new Uint8Array(tileScales.buffer), codes);
  return [
    {
      name: "FP8 tile128 scalar",
      run: () => {
        for (let row = 0; row < rows; row += 1)
          decodeScaledRow(codes, out, row * COLS, COLS, TILE, tileScales, tileRow(row));
        return out;
      },
    },
    {
      name: "FP8 tile128 SIMD, in place",
      run: () => {
        for (let row = 0; row < rows; row += 1) space.fp8Row(row * COLS, COLS, TILE, tileRow(row));
        return space.values;
      },
    },
  ];
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function measure(arms: Arm[]): void {
  const reference = Uint32Array.from(
    new Uint32Array(arms[0]?.run().buffer ?? new ArrayBuffer(0), 0, elements),
  );
  for (const arm of arms.slice(1)) {
    const result = arm.run();
    const bits = new Uint32Array(result.buffer, result.byteOffset, elements);
    const differ = bits.findIndex((b, i) => b !== reference[i]);
    if (differ >= 0) throw new Error(`${arm.name} differs from ${arms[0]?.name} at element ${differ}`);
  }
  const times = new Map<string, number[]>(arms.map((a) => [a.name, []]));
  for (let round = 0; round < Number(args.rounds); round += 1) {
    for (const arm of [...arms, ...[...arms].reverse()]) {
      const started = performance.now();
      arm.run();
      times.get(arm.name)?.push(((performance.now() - started) * 1e6) / elements);
    }
  }
  const scalar = median(times.get(arms[0]?.name as string) ?? []);
  for (const arm of arms) {
    const ns = median(times.get(arm.name) ?? []);
    process.stdout.write(
      `${arm.name.padEnd(34)} ${ns.toFixed(2).padStart(6)} ns/element  ${(scalar / ns).toFixed(1).padStart(5)}x the scalar loop\n`,
    );
  }
}

process.stdout.write(
  `${elements / 2 ** 20}M elements (${rows} rows of ${COLS}), ${args.rounds} rounds, medians; values checked bit for bit\n`,
);
measure(mxfp4Arms());
measure(fp8Arms());
