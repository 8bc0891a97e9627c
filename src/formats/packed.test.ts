import { mkdtemp, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeCheckpoint } from "./checkpoint.js";
import {
  openPacked,
  PACKED_ALIGNMENT,
  PACKED_MANIFEST,
  type PackedManifest,
  rankFileName,
} from "./packed-manifest.js";
import { readPackedTensors } from "./packed-read.js";
import { verifyPacked } from "./packed-verify.js";
import { packCheckpoint } from "./packed-write.js";

let root: string;
let source: string;
const blocks = new Uint8Array(4 * 2 * 16).map((_, i) => (i * 37) & 0xff);
const scales = new Uint8Array(4 * 2).map((_, i) => 120 + (i % 5));
const norm = new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer);
const proj = new Uint8Array(new Uint16Array(6 * 8).map((_, i) => 0x3f80 + i).buffer);
const sourceBytes: Record<string, Uint8Array> = {
  "mlp.experts.w_blocks": blocks,
  "mlp.experts.w_scales": scales,
  "norm.weight": norm,
  "proj.weight": proj,
};

async function codeOf(run: Promise<unknown>): Promise<string> {
  try {
    await run;
  } catch (error) {
    const e = error as { code: string; message: string };
    expect(e.message.split("\n")).toHaveLength(1);
    return `${e.code}: ${e.message}`;
  }
  throw new Error("it did not fail");
}

/** Every tensor read back whole from packed directory `dir`, `pieceBytes` at a time. */
async function readBack(dir: string, pieceBytes?: number): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  const packed = await openPacked(dir);
  await readPackedTensors(
    packed,
    (t) => {
      const bytes = new Uint8Array(
        t.shards.reduce((a, s) => a + s.bytes, 0) / (t.split === "rows" ? 1 : t.shards.length),
      );
      out.set(t.name, bytes);
      return bytes;
    },
    pieceBytes,
  );
  return out;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-packed-"));
  source = join(root, "src");
  await writeCheckpoint(source, [
    { name: "mlp.experts.w_blocks", dtype: "U8", shape: [4, 2, 16], data: blocks },
    { name: "mlp.experts.w_scales", dtype: "U8", shape: [4, 2], data: scales },
    { name: "norm.weight", dtype: "F32", shape: [4], data: norm },
    { name: "proj.weight", dtype: "BF16", shape: [6, 8], data: proj },
  ]);
  await writeFile(join(source, "config.json"), "{}\n");
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe("packed load format", () => {
  it("splits tensors of 2+ dimensions by rows and replicates the rest, aligned, and reads back every byte", async () => {
    const out = join(root, "p2");
    const report = await packCheckpoint(source, out, 2);
    expect(report.tensors).toBe(4);
    const { manifest } = await openPacked(out);
    const byName = new Map(manifest.tensors.map((t) => [t.name, t]));
    expect(byName.get("norm.weight")?.split).toBe("replicated");
    expect(byName.get("proj.weight")?.shards.map((s) => s.bytes)).toEqual([48, 48]);
    expect(manifest.tensors.flatMap((t) => t.shards.map((s) => s.offset % PACKED_ALIGNMENT))).toEqual(
      new Array(8).fill(0),
    );
    expect(await readFile(join(out, "config.json"), "utf8")).toBe("{}\n");
    // Whole shards in one read each, and in reads of 5 bytes, several in flight (the CRC runs across them).
    for (const pieceBytes of [undefined, 5]) {
      const back = await readBack(out, pieceBytes);
      for (const [name, bytes] of Object.entries(sourceBytes)) expect(back.get(name)).toEqual(bytes);
    }
    const verified = await verifyPacked(source, out);
    expect(verified.ok).toBe(true);
    expect(verified.weights.every((w) => w.sha256A === w.sha256B && w.bytesIdentical)).toBe(true);
  });

  it("refuses a rank count that does not divide a split dimension, naming the tensor, and writes nothing", async () => {
    const out = join(root, "p3");
    expect(await codeOf(packCheckpoint(source, out, 3))).toMatch(
      /^PACKED_RANKS_INDIVISIBLE: .*tensor mlp\.experts\.w_blocks has 4 rows .*3 ranks/,
    );
    await expect(stat(out)).rejects.toThrow();
  });

  it("refuses a truncated rank file before reading, naming the file and the tensor cut off", async () => {
    const out = join(root, "trunc");
    await packCheckpoint(source, out, 2);
    const file = join(out, rankFileName(1, 2));
    await truncate(file, PACKED_ALIGNMENT + 10);
    expect(await codeOf(openPacked(out))).toMatch(
      new RegExp(`^PACKED_FILE_TRUNCATED: ${file}: ${PACKED_ALIGNMENT + 10} bytes .* tensor \\S+ is cut off`),
    );
  });

  it("refuses a flipped bit by its CRC-32, naming file, tensor and rank; verify reports the difference", async () => {
    const out = join(root, "flip");
    await packCheckpoint(source, out, 2);
    const packed = await openPacked(out);
    const proj1 = packed.manifest.tensors.find((t) => t.name === "proj.weight")?.shards[1];
    const file = join(out, rankFileName(1, 2));
    const bytes = await readFile(file);
    const at = (proj1?.offset ?? 0) + 3;
    bytes[at] = (bytes[at] as number) ^ 0x01;
    await writeFile(file, bytes);
    for (const pieceBytes of [undefined, 7])
      expect(await codeOf(readBack(out, pieceBytes))).toMatch(
        new RegExp(`^PACKED_CHECKSUM_MISMATCH: ${file}: tensor proj\\.weight \\(rank 1,`),
      );
    expect(await codeOf(verifyPacked(source, out))).toMatch(/^PACKED_CHECKSUM_MISMATCH: .*proj\.weight/);
  });

  it("verify fails a pack whose bytes and checksums were both changed, and lists tensors on one side only", async () => {
    const out = join(root, "edited");
    await packCheckpoint(source, out, 1);
    const path = join(out, PACKED_MANIFEST);
    const manifest = JSON.parse(await readFile(path, "utf8")) as PackedManifest;
    const norm0 = manifest.tensors.find((t) => t.name === "norm.weight")?.shards[0];
    const file = join(out, rankFileName(0, 1));
    const bytes = await readFile(file);
    bytes.set(new Uint8Array(new Float32Array([1, 2, 3, 5]).buffer), norm0?.offset ?? 0);
    await writeFile(file, bytes);
    const { crc32 } = await import("node:zlib");
    if (norm0 !== undefined) norm0.crc32 = crc32(bytes.subarray(norm0.offset, norm0.offset + norm0.bytes));
    manifest.tensors.push({
      ...(manifest.tensors[0] as PackedManifest["tensors"][number]),
      name: "extra.weight",
      source: { file: "x", tensor: "extra.weight" },
    });
    await writeFile(path, JSON.stringify(manifest));
    const report = await verifyPacked(source, out);
    expect(report.ok).toBe(false);
    expect(report.onlyInB).toEqual(["extra.weight"]);
    expect(report.weights.find((w) => w.name === "norm.weight")).toMatchObject({
      valuesIdentical: false,
      mismatches: 1,
      firstMismatch: 3,
      maxAbsDifference: 1,
    });
  });

  it("refuses a manifest that does not describe its files, naming the field", async () => {
    const out = join(root, "bad");
    await packCheckpoint(source, out, 1);
    const path = join(out, PACKED_MANIFEST);
    const manifest = JSON.parse(await readFile(path, "utf8")) as PackedManifest;
    (manifest.tensors[0] as { shape: number[] }).shape = [4, 2, 15];
    await writeFile(path, JSON.stringify(manifest));
    expect(await codeOf(openPacked(out))).toMatch(
      /^PACKED_MANIFEST_INVALID: .*mlp\.experts\.w_blocks's shard on rank 0 is 128 bytes/,
    );
    await writeFile(path, JSON.stringify({ ...manifest, ranks: "two" }));
    expect(await codeOf(openPacked(out))).toMatch(/^PACKED_MANIFEST_INVALID: .* at ranks /);
    (manifest.tensors[0] as { shape: number[] }).shape = [4, 2, 16];
    await rm(join(out, rankFileName(0, 1)));
    await writeFile(path, JSON.stringify(manifest));
    expect(await codeOf(openPacked(out))).toMatch(/^PACKED_FILE_MISSING: /);
  });
});
