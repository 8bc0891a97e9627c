import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { float32ToBf16 } from "./bf16.js";
import { type Checkpoint, openCheckpoint, writeCheckpoint } from "./checkpoint.js";
import {
  type Job,
  PIECE_BYTES,
  partBytes,
  rowRanges,
  runJob,
  Scratch,
  sourceRowBytes,
} from "./convert-jobs.js";
import { detectLogicalTensors, type LogicalTensor } from "./logical.js";
import { dequantizeMxfp4 } from "./mxfp4.js";
import { mxfp4ToFp8Block32, mxfp4ToFp8Tile128 } from "./mxfp4-to-fp8.js";

// Two matrices of 640 rows by 41 blocks (1312 columns: the last 128-column tile is partial). One
// matrix is over PIECE_BYTES of source, so a whole-tensor job runs as several pieces of 128-row bands.
const [EXPERTS, ROWS, GROUPS] = [2, 640, 41];
const COLS = GROUPS * 32;

let root: string;
let ck: Checkpoint;
let tensor: LogicalTensor;
let blocks: Uint8Array;
let scales: Uint8Array;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-jobs-"));
  let x = 7;
  const next = () => {
    x = (x * 1664525 + 1013904223) >>> 0;
    return x >>> 24;
  };
  blocks = Uint8Array.from({ length: EXPERTS * ROWS * GROUPS * 16 }, next);
  scales = Uint8Array.from({ length: EXPERTS * ROWS * GROUPS }, () => 120 + (next() & 7));
  const dir = join(root, "src");
  await writeCheckpoint(dir, [
    { name: "w_blocks", dtype: "U8", shape: [EXPERTS, ROWS, GROUPS, 16], data: blocks },
    { name: "w_scales", dtype: "U8", shape: [EXPERTS, ROWS, GROUPS], data: scales },
  ]);
  ck = await openCheckpoint(dir, { blockingReads: true });
  tensor = detectLogicalTensors(ck.tensors)[0] as LogicalTensor;
});

afterAll(async () => {
  await ck.close();
  await rm(root, { recursive: true, force: true });
});

/** Runs `job` for the whole tensor into a fresh file, each part after the last; returns the parts read back. */
async function runWhole(job: Job): Promise<Buffer[]> {
  const sizes = partBytes(job);
  const path = join(root, `out-${Math.random().toString(36).slice(2)}`);
  await writeFile(path, new Uint8Array(sizes.reduce((a, b) => a + b, 0)));
  const positions = sizes.map((_, k) => sizes.slice(0, k).reduce((a, b) => a + b, 0));
  await runJob(ck, job, { path, positions }, new Scratch());
  const bytes = await readFile(path);
  return sizes.map((n, k) => bytes.subarray(positions[k], (positions[k] as number) + n));
}

describe("rowRanges", () => {
  const matrix = (rows: number): LogicalTensor => ({
    kind: "plain",
    name: "m",
    shape: [4, rows, 8],
    dtype: "F32",
    parts: ["m"],
  });
  it("cuts untiled rows by bytes, and tiled rows into whole matrices or 128-row bands of one", () => {
    expect(rowRanges(matrix(100), false, 10, 250, 3, 60)).toEqual([
      [3, 28],
      [28, 53],
      [53, 60],
    ]);
    // 100-row matrices of 1000 bytes fit 2 to a range of 2500 bytes.
    expect(rowRanges(matrix(100), true, 10, 2500, 0, 400)).toEqual([
      [0, 200],
      [200, 400],
    ]);
    // 300-row matrices of 3000 bytes do not fit: 256-row bands (2 x 128 rows), cut at each matrix.
    expect(rowRanges(matrix(300), true, 10, 2600, 300, 900)).toEqual([
      [300, 556],
      [556, 600],
      [600, 856],
      [856, 900],
    ]);
    // Never less than one row or one band.
    expect(rowRanges(matrix(300), false, 10, 1, 0, 2)).toEqual([
      [0, 1],
      [1, 2],
    ]);
    expect(rowRanges(matrix(300), true, 10, 1, 0, 300)).toEqual([
      [0, 128],
      [128, 256],
      [256, 300],
    ]);
  });
});

describe("runJob", () => {
  it("writes a job of several pieces where they belong: tiles and scale grid as one whole conversion", async () => {
    const rows = EXPERTS * ROWS;
    expect(ROWS * sourceRowBytes(ck, tensor)).toBeGreaterThan(PIECE_BYTES);
    const [elements, scaleInv] = await runWhole({
      op: "mxfp4-to-fp8",
      block: "tile128",
      allowInexact: false,
      tensor,
      start: 0,
      end: rows,
    });
    // The reference: each matrix whole, on plain arrays (no SIMD arena), parts one after another.
    const matrices = Array.from({ length: EXPERTS }, (_, e) =>
      mxfp4ToFp8Tile128(
        blocks.subarray(e * ROWS * GROUPS * 16, (e + 1) * ROWS * GROUPS * 16),
        scales.subarray(e * ROWS * GROUPS, (e + 1) * ROWS * GROUPS),
        ROWS,
        COLS,
        false,
      ),
    );
    expect(matrices.every((m) => m.inexactTiles.length === 0)).toBe(true);
    expect(elements?.equals(Buffer.concat(matrices.map((m) => m.elements)))).toBe(true);
    const grid = Buffer.concat(matrices.map((m) => new Uint8Array(m.scaleInv.buffer)));
    expect(scaleInv?.equals(grid)).toBe(true);
  });

  it("writes block32 codes with their scales, and bf16, for a job that starts mid-tensor", async () => {
    const [start, end] = [200, 1100];
    const [codes, scaleInv] = await runWhole({
      op: "mxfp4-to-fp8",
      block: "block32",
      allowInexact: false,
      tensor,
      start,
      end,
    });
    const [g0, g1] = [start * GROUPS, end * GROUPS];
    expect(codes?.equals(mxfp4ToFp8Block32(blocks.subarray(g0 * 16, g1 * 16), scales.subarray(g0, g1)))).toBe(
      true,
    );
    const inverse = new Float32Array(new Uint8Array(scaleInv as Buffer).buffer);
    expect(Array.from(inverse.subarray(0, 3))).toEqual(
      Array.from(scales.subarray(g0, g0 + 3), (s) => 2 ** (s - 127)),
    );

    const [bf16] = await runWhole({ op: "to-bf16", allowInexact: false, tensor, start, end });
    const values = dequantizeMxfp4(blocks.subarray(g0 * 16, g1 * 16), scales.subarray(g0, g1));
    expect(bf16?.equals(new Uint8Array(float32ToBf16(values).buffer))).toBe(true);
  });
});
