import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Checkpoint, openCheckpoint, writeCheckpoint } from "./checkpoint.js";
import {
  detectLogicalTensors,
  findLogical,
  type LogicalTensor,
  logicalRows,
  logicalTensors,
  logicalWeight,
  RowBuffers,
  readLogicalRows,
  readLogicalTensor,
} from "./logical.js";
import { encodeMinifloat, FP8_E4M3FN } from "./minifloat.js";

let root: string;
let ck: Checkpoint;
const f32 = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-logical-"));
  // A [2, 3, 64] fp8 weight with per-[1, 32] scales, and a [130, 32] one with 128x128 tiles.
  const small = Uint8Array.from({ length: 2 * 3 * 64 }, (_, i) => encodeMinifloat(FP8_E4M3FN, (i % 9) - 4));
  const tall = Uint8Array.from({ length: 130 * 32 }, (_, i) => encodeMinifloat(FP8_E4M3FN, i % 5));
  const odd = Uint8Array.from({ length: 3 * 40 }, (_, i) => encodeMinifloat(FP8_E4M3FN, (i % 7) - 3));
  await writeCheckpoint(root, [
    { name: "a.weight", dtype: "F8_E4M3", shape: [2, 3, 64], data: small },
    {
      name: "a.weight_scale_inv",
      dtype: "F32",
      shape: [2, 3, 2],
      data: f32(Array.from({ length: 12 }, (_, i) => 2 ** i)),
    },
    { name: "b.weight", dtype: "F8_E4M3", shape: [130, 32], data: tall },
    { name: "b.weight_scale_inv", dtype: "F32", shape: [2, 1], data: f32([0.5, 4]) },
    { name: "c.weight_scale_inv", dtype: "F32", shape: [1], data: f32([1]) },
    // Rows of 40 are not whole 16-byte vectors: the scalar decoder's case.
    { name: "d.weight", dtype: "F8_E4M3", shape: [3, 40], data: odd },
    { name: "d.weight_scale_inv", dtype: "F32", shape: [3, 2], data: f32([1, 2, 4, 8, 16, 32]) },
    {
      name: "e_blocks",
      dtype: "U8",
      shape: [3, 2, 16],
      data: Uint8Array.from({ length: 96 }, (_, i) => i * 7),
    },
    { name: "e_scales", dtype: "U8", shape: [3, 2], data: Uint8Array.from([120, 127, 130, 1, 254, 127]) },
  ]);
  ck = await openCheckpoint(root);
});
afterAll(async () => {
  await ck.close();
  await rm(root, { recursive: true, force: true });
});

describe("logical weights", () => {
  it("recognises FP8 scale blocks by the scale grid's shape; anything else stays plain", () => {
    const found = detectLogicalTensors(ck.tensors).map((t) => [
      t.name,
      t.kind,
      t.kind === "fp8" ? t.block : null,
    ]);
    expect(found).toEqual([
      ["a.weight", "fp8", [1, 32]],
      ["b.weight", "fp8", [128, 128]],
      ["c.weight_scale_inv", "plain", null],
      ["d.weight", "fp8", [1, 32]],
      ["e", "mxfp4", null],
    ]);
    expect(() => findLogical(detectLogicalTensors(ck.tensors), "zz", root)).toThrow(/no weight named "zz"/);
  });

  it("reads a checkpoint one weight at a time through its own name map, and finds each by name", () => {
    const find = (name: string) => ck.find(name);
    const streamed = [...logicalTensors(ck.tensors, find)];
    expect(streamed).toEqual(detectLogicalTensors(ck.tensors));
    for (const weight of streamed) expect(logicalWeight(weight.name, find)).toEqual(weight);
    // Parts of a weight are not weights of their own.
    for (const part of ["a.weight_scale_inv", "e_blocks", "e_scales", "zz"])
      expect(logicalWeight(part, find)).toBeUndefined();
  });

  it("refuses MXFP4 blocks without their scales or not U8, scales without blocks, or a shape that is not blocks, naming them", () => {
    const info = (name: string, shape: number[]) => ({
      name,
      dtype: "U8" as const,
      shape,
      byteLength: shape.reduce((a, b) => a * b, 1),
      dataOffsets: [0, 0] as const,
    });
    expect(() => detectLogicalTensors([info("x.w_blocks", [4, 2, 16])])).toThrow(
      /x\.w_blocks: MXFP4 blocks need x\.w_scales, U8 of shape \[4, 2\], which is missing/,
    );
    expect(() => detectLogicalTensors([info("x.w_blocks", [4, 2, 16]), info("x.w_scales", [4, 3])])).toThrow(
      /not U8 \[4, 3\]/,
    );
    expect(() => detectLogicalTensors([info("x.w_blocks", [16]), info("x.w_scales", [])])).toThrow(
      /x\.w_blocks: MXFP4 blocks need shape \[\.\.\., groups, 16\], not \[16\]/,
    );
    expect(() =>
      detectLogicalTensors([{ ...info("x.w_blocks", [4, 2, 16]), dtype: "I8" }, info("x.w_scales", [4, 2])]),
    ).toThrow(/x\.w_blocks: MXFP4 blocks are U8 bytes of two 4-bit codes, not I8/);
    expect(() => detectLogicalTensors([info("x.w_scales", [4, 2]), info("y", [4])])).toThrow(
      /x\.w_scales: MXFP4 scales without x\.w_blocks/,
    );
    // One name stored both as MXFP4 and as itself would be two weights, whichever comes first.
    for (const order of [
      [info("x.w", [4, 64]), info("x.w_blocks", [4, 2, 16]), info("x.w_scales", [4, 2])],
      [info("x.w_scales", [4, 2]), info("x.w_blocks", [4, 2, 16]), info("x.w", [4, 64])],
    ])
      expect(() => detectLogicalTensors(order)).toThrow(
        /x\.w: the weight "x\.w" is stored twice, as this tensor and as MXFP4 \(x\.w_blocks, x\.w_scales\)/,
      );
    // One row of blocks is a 1-D weight.
    expect(detectLogicalTensors([info("v_blocks", [2, 16]), info("v_scales", [2])])).toMatchObject([
      { kind: "mxfp4", name: "v", shape: [64] },
    ]);
  });

  it("decodes any row range with the right scales", async () => {
    const weights = detectLogicalTensors(ck.tensors);
    const a = findLogical(weights, "a.weight", root);
    const all = await readLogicalTensor(ck, a);
    // row 4 = matrix 1, row 1; its columns 32..63 use scale index 1*6 + 1*2 + 1 = 9
    const i = 4 * 64 + 40;
    expect(all[i]).toBe(((i % 9) - 4) * 2 ** 9);
    const part = await readLogicalRows(ck, a, 4, 6);
    expect(Array.from(part)).toEqual(Array.from(all.subarray(4 * 64, 6 * 64)));
    const b = findLogical(weights, "b.weight", root);
    const rows = await readLogicalRows(ck, b, 127, 130);
    expect([rows[0], rows[32], rows[33]]).toEqual([
      ((127 * 32) % 5) * 0.5,
      ((128 * 32) % 5) * 4,
      ((128 * 32 + 1) % 5) * 4,
    ]);
  });

  it("decodes rows that are not whole vectors, and rows that are, to the same definition", async () => {
    const weights = detectLogicalTensors(ck.tensors);
    const d = await readLogicalTensor(ck, findLogical(weights, "d.weight", root));
    expect(Array.from(d)).toEqual(
      Array.from(d, (_, i) => ((i % 7) - 3) * 2 ** (2 * Math.floor(i / 40) + (i % 40 >= 32 ? 1 : 0))),
    );
    const a = await readLogicalTensor(ck, findLogical(weights, "a.weight", root));
    expect(Array.from(a)).toEqual(
      Array.from(a, (_, i) => ((i % 9) - 4) * 2 ** (2 * Math.floor(i / 64) + (i % 64 >= 32 ? 1 : 0))),
    );
  });

  it("decodes the same into reused RowBuffers, in place or not, whatever the rows read before", async () => {
    const weights = detectLogicalTensors(ck.tensors).filter((t) => t.kind !== "plain");
    const buffers = new RowBuffers();
    for (const pass of [0, 1]) {
      for (const weight of weights) {
        const { rows } = logicalRows(weight);
        const whole = await readLogicalTensor(ck, weight);
        const cols = whole.length / rows;
        const [start, end] = pass === 0 ? [0, rows] : [1, rows];
        const view = await readLogicalRows(ck, weight, start, end, buffers);
        expect([weight.name, Array.from(view)]).toEqual([
          weight.name,
          Array.from(whole.subarray(start * cols)),
        ]);
      }
    }
    await expect(readLogicalRows(ck, weights[0] as LogicalTensor, 2, 1, buffers)).rejects.toThrow(
      /rows \[2, 1\) are outside its 6 rows/,
    );
    const e = await readLogicalTensor(ck, findLogical(weights, "e", root));
    // Block 0 at scale 2^-7: byte 1 = 0x07, so element 2 (its low nibble) is 6 and element 3 is 0.
    expect([e[2], e[3]]).toEqual([6 * 2 ** -7, 0]);
  });
});
