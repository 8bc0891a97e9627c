import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openCheckpoint, writeCheckpoint } from "./checkpoint.js";
import { convertCheckpoint } from "./convert.js";
import { inspectCheckpoint } from "./inspect.js";
import { compareCheckpointValues, verifyCheckpoints } from "./verify.js";

let root: string;
const blocks = new Uint8Array(4 * 2 * 16).map((_, i) => (i * 37) & 0xff);
const scales = new Uint8Array(4 * 2).map((_, i) => 120 + (i % 5));
const norm = new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer);

async function make(dir: string, tweak = false) {
  const b = blocks.slice();
  if (tweak) b[5] = (b[5] as number) ^ 0x10;
  await writeCheckpoint(dir, [
    { name: "mlp.w_blocks", dtype: "U8", shape: [4, 2, 16], data: b },
    { name: "mlp.w_scales", dtype: "U8", shape: [4, 2], data: scales },
    { name: "norm.weight", dtype: "F32", shape: [4], data: norm },
  ]);
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-verify-"));
  await make(join(root, "a"));
  await make(join(root, "tweaked"), true);
  await convertCheckpoint(join(root, "a"), join(root, "fp8"), { to: "fp8", workers: 0 });
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("inspect", () => {
  it("lists tensors, logical weights, formats and totals", async () => {
    const report = await inspectCheckpoint(join(root, "a"));
    expect(report.tensors.map((t) => [t.name, t.dtype, t.bytes])).toEqual([
      ["mlp.w_blocks", "U8", 128],
      ["mlp.w_scales", "U8", 8],
      ["norm.weight", "F32", 16],
    ]);
    expect(report.weights.map((w) => [w.name, w.format, w.shape])).toEqual([
      ["mlp.w", "mxfp4", [4, 64]],
      ["norm.weight", "F32", [4]],
    ]);
    expect(report.formats).toEqual({ mxfp4: { weights: 1, bytes: 136 }, plain: { weights: 1, bytes: 16 } });
    expect(report.totals).toEqual({ tensors: 3, bytes: 152, parameters: 260 });
    const fp8 = await inspectCheckpoint(join(root, "fp8"));
    expect(fp8.weights[0]?.format).toBe("fp8-e4m3 [128x128]");
    expect(fp8.quantizationConfig).toMatchObject({ quant_method: "fp8" });
  });
});

describe("verify", () => {
  it("finds MXFP4 and its exact FP8 re-encoding bit-identical in value, not in bytes", async () => {
    const report = await verifyCheckpoints(join(root, "a"), join(root, "fp8"));
    expect(report.ok).toBe(true);
    const w = report.weights.find((x) => x.name === "mlp.w");
    expect(w).toMatchObject({
      formatA: "mxfp4",
      formatB: "fp8-e4m3 [128x128]",
      bytesIdentical: false,
      valuesIdentical: true,
    });
    expect(report.weights.find((x) => x.name === "norm.weight")?.bytesIdentical).toBe(true);
  });

  it("reports the changed element and missing weights", async () => {
    const report = await verifyCheckpoints(join(root, "tweaked"), join(root, "fp8"), { workers: 2 });
    expect(report.ok).toBe(false);
    const w = report.weights.find((x) => x.name === "mlp.w");
    expect(w?.mismatches).toBe(1);
    expect(w?.firstMismatch).toBe(11); // byte 5's high nibble is element 11
    // Worker threads and the calling thread find the same.
    expect(await verifyCheckpoints(join(root, "tweaked"), join(root, "fp8"), { workers: 0 })).toEqual(report);
    // Without checksums, the same value comparisons.
    const values = await compareCheckpointValues(join(root, "tweaked"), join(root, "fp8"));
    expect(values).toEqual({
      ...report,
      weights: report.weights.map(({ sha256A, sha256B, bytesIdentical, ...rest }) => rest),
    });
    // From a checkpoint already open, listing only what differs: the checkpoint stays open.
    const open = await openCheckpoint(join(root, "tweaked"));
    const differing = await compareCheckpointValues(open, join(root, "fp8"), { differing: true });
    expect(differing).toEqual({ ...values, weights: values.weights.filter((x) => !x.valuesIdentical) });
    expect(differing.weights.map((x) => x.name)).toEqual(["mlp.w"]);
    expect((await open.readTensor("norm.weight")).byteLength).toBe(16);
    await open.close();
    const self = await verifyCheckpoints(join(root, "a"), join(root, "a", "model.safetensors"));
    expect(self.ok).toBe(true);
    await writeCheckpoint(join(root, "norm-only"), [
      { name: "norm.weight", dtype: "F32", shape: [4], data: norm },
    ]);
    const missing = await verifyCheckpoints(join(root, "a"), join(root, "norm-only"));
    expect(missing).toMatchObject({ ok: false, onlyInA: ["mlp.w"], onlyInB: [] });
  });

  it("compares values past float32's range in a width where they still differ", async () => {
    // Scale 2^127: 6 * 2^127 and 4 * 2^127 both overflow float32 to infinity, and must still differ.
    const big = async (dir: string, nibble: number) =>
      writeCheckpoint(join(root, dir), [
        { name: "w_blocks", dtype: "U8", shape: [1, 1, 16], data: new Uint8Array(16).fill(nibble | 0x20) },
        { name: "w_scales", dtype: "U8", shape: [1, 1], data: new Uint8Array([254]) },
      ]);
    await big("six", 7);
    await big("four", 6);
    for (const workers of [0, 1]) {
      const report = await compareCheckpointValues(join(root, "six"), join(root, "four"), { workers });
      expect(report.ok).toBe(false);
      expect(report.weights[0]).toMatchObject({
        mismatches: 16,
        firstMismatch: 0,
        maxAbsDifference: 2 ** 128,
      });
      expect((await compareCheckpointValues(join(root, "six"), join(root, "six"), { workers })).ok).toBe(
        true,
      );
    }
  });
});
