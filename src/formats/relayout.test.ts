import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openCheckpoint, writeCheckpoint } from "./checkpoint.js";
import { relayoutCheckpoint } from "./relayout.js";
import { verifyCheckpoints } from "./verify.js";

let root: string;
const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 255);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-relayout-"));
  // 2 experts, 4 gate/up rows (interleaved), 64 columns as MXFP4; a bf16 projection; a norm.
  await writeCheckpoint(
    join(root, "src"),
    [
      { name: "l0.experts.gate_up_proj_blocks", dtype: "U8", shape: [2, 4, 2, 16], data: bytes(256, 1) },
      {
        name: "l0.experts.gate_up_proj_scales",
        dtype: "U8",
        shape: [2, 4, 2],
        data: bytes(16, 120).map((b) => 118 + (b % 8)),
      },
      { name: "l0.o_proj.weight", dtype: "BF16", shape: [3, 5], data: bytes(30, 7) },
      { name: "l0.norm.weight", dtype: "F32", shape: [4], data: bytes(16, 3) },
    ],
    { maxShardBytes: 200 },
  );
  await writeFile(join(root, "src", "config.json"), '{"a":1}');
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function tensorBytes(dir: string, name: string) {
  const ck = await openCheckpoint(dir);
  try {
    return Array.from(await ck.readTensor(name));
  } finally {
    await ck.close();
  }
}

describe("relayoutCheckpoint", () => {
  it("round-trips every re-layout bit-identically", async () => {
    const src = join(root, "src");
    const there = join(root, "there");
    const back = join(root, "back");
    await relayoutCheckpoint(src, there, {
      swapNibbles: /gate_up_proj$/,
      transpose: /o_proj/,
      gateUp: { match: /gate_up_proj$/, to: "concatenated" },
      splitExperts: { match: /experts\.gate_up_proj(_blocks|_scales)$/, to: "experts.{e}.gate_up_proj$1" },
      rename: [{ from: /^l0\./, to: "model.layers.0." }],
    });
    const moved = await openCheckpoint(there);
    expect(moved.tensors.map((t) => `${t.name} [${t.shape.join(",")}]`).sort()).toEqual([
      "model.layers.0.experts.0.gate_up_proj_blocks [4,2,16]",
      "model.layers.0.experts.0.gate_up_proj_scales [4,2]",
      "model.layers.0.experts.1.gate_up_proj_blocks [4,2,16]",
      "model.layers.0.experts.1.gate_up_proj_scales [4,2]",
      "model.layers.0.norm.weight [4]",
      "model.layers.0.o_proj.weight [5,3]",
    ]);
    expect(moved.indexed).toBe(true);
    await moved.close();
    // Expert 0's second stored row is up row 0, which sat at row 1 before; its first byte had its nibbles swapped.
    const source = await tensorBytes(src, "l0.experts.gate_up_proj_blocks");
    const split = await tensorBytes(there, "model.layers.0.experts.0.gate_up_proj_blocks");
    const swap = (b: number) => ((b & 15) << 4) | (b >> 4);
    expect(split.slice(2 * 32, 2 * 32 + 4)).toEqual(source.slice(32, 36).map(swap));

    await relayoutCheckpoint(there, back, {
      rename: [{ from: /^model\.layers\.0\./, to: "l0." }],
      fuseExperts: {
        match: /experts\.(?<e>\d+)\.gate_up_proj(_blocks|_scales)$/,
        to: "experts.gate_up_proj$2",
      },
    });
    const middle = join(root, "middle");
    await relayoutCheckpoint(back, middle, {
      swapNibbles: /gate_up_proj$/,
      transpose: /o_proj/,
      gateUp: { match: /gate_up_proj$/, to: "interleaved" },
    });
    const report = await verifyCheckpoints(src, middle);
    expect(report.ok).toBe(true);
    expect(report.weights.every((w) => w.bytesIdentical)).toBe(true);
  });

  it("refuses re-layouts that would lose information or collide, leaving no output", async () => {
    const src = join(root, "src");
    await expect(relayoutCheckpoint(src, join(root, "x1"), { transpose: /gate_up/ })).rejects.toThrow(
      /gate_up_proj: a mxfp4 weight cannot be transposed losslessly/,
    );
    await expect(
      relayoutCheckpoint(src, join(root, "x2"), { rename: [{ from: /norm|o_proj/, to: "same" }] }),
    ).rejects.toThrow(/two tensors would get this name/);
    await expect(relayoutCheckpoint(src, join(root, "x3"), { swapNibbles: /norm/ })).rejects.toThrow(
      /MXFP4 weights only/,
    );
  });
});
