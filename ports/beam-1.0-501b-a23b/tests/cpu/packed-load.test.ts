import { mkdtemp, readFile, rm, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isBringupError } from "../../../../src/common/errors.js";
import { loadModel } from "../../../../src/engine/index.js";
import { writeTinyModel } from "../../../../src/engine/tiny/write.js";
import {
  openCheckpoint,
  openPacked,
  PACKED_MANIFEST,
  type PackedManifest,
  packCheckpoint,
  rankFileName,
  verifyPacked,
  writeCheckpoint,
} from "../../../../src/formats/index.js";
import { promptAndGreedy } from "../../../../test/helpers/engine-runs.js";
import { portReference } from "../../../../test/helpers/port-reference.js";

const ref = await portReference("beam-1.0-501b-a23b");
let root: string;
let source: string;
let packed: string;

async function loadError(dir: string): Promise<string> {
  try {
    await loadModel(dir);
  } catch (error) {
    if (!isBringupError(error)) throw error;
    expect(error.message.split("\n")).toHaveLength(1);
    return `${error.code}: ${error.message}`;
  }
  throw new Error(`${dir} loaded`);
}

/** A copy of the packed directory to break. */
async function copyPacked(name: string): Promise<string> {
  const dir = join(root, name);
  await packCheckpoint(source, dir, 2);
  return dir;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-beam-"));
  source = join(root, "safetensors");
  packed = join(root, "packed");
  await writeTinyModel(source, ref.referenceFiles());
  await packCheckpoint(source, packed, 2);
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe("Beam's packed load format on the tiny reference config", () => {
  it("packs every tensor of the checkpoint, MXFP4 experts split by experts, and verify proves it exact", async () => {
    const { manifest } = await openPacked(packed);
    const ck = await openCheckpoint(source);
    expect(manifest.tensors.map((t) => t.name).sort()).toEqual(ck.tensors.map((t) => t.name).sort());
    await ck.close();
    const blocks = manifest.tensors.find((t) => t.name === "model.layers.0.mlp.experts.gate_up_proj_blocks");
    expect(blocks).toMatchObject({ dtype: "U8", shape: [4, 128, 2, 16], split: "rows" });
    expect(blocks?.shards.map((s) => s.bytes)).toEqual([8192, 8192]);
    const report = await verifyPacked(source, packed);
    expect(report.ok).toBe(true);
    expect(report.weights.every((w) => w.bytesIdentical && w.sha256A === w.sha256B)).toBe(true);
  });

  it("loads to the same prompt logprobs and greedy tokens as the safetensors load", async () => {
    const [a, b] = [await loadModel(source), await loadModel(packed)];
    expect(b.numParameters).toBe(a.numParameters);
    const prompt = a.tokenizer.encode("The packed load reads each rank's file straight into memory.");
    const [ra, rb] = [await promptAndGreedy(a, prompt, {}), await promptAndGreedy(b, prompt, {})];
    expect(rb.logprobs).toEqual(ra.logprobs);
    expect(rb.tokens).toEqual(ra.tokens);
  });

  it("refuses a truncated rank file, a flipped bit and an unknown tensor, each in one line naming it", async () => {
    const cut = await copyPacked("cut");
    await truncate(join(cut, rankFileName(1, 2)), 4096);
    expect(await loadError(cut)).toMatch(
      /^PACKED_FILE_TRUNCATED: .*rank-001-of-002\.bin: 4096 bytes where packed\.json says \d+, so tensor \S+ is cut off/,
    );

    const flipped = await copyPacked("flipped");
    const manifest = JSON.parse(await readFile(join(flipped, PACKED_MANIFEST), "utf8")) as PackedManifest;
    const norm = manifest.tensors.find((t) => t.name === "model.norm.weight")?.shards[0];
    const file = join(flipped, rankFileName(0, 2));
    const bytes = await readFile(file);
    const at = (norm?.offset ?? 0) + 1;
    bytes[at] = (bytes[at] as number) ^ 0x40;
    await writeFile(file, bytes);
    expect(await loadError(flipped)).toMatch(
      /^PACKED_CHECKSUM_MISMATCH: .*rank-000-of-002\.bin: tensor model\.norm\.weight \(rank 0,/,
    );

    // A checkpoint with a tensor the config has no place for, packed: the loader refuses it by name.
    const extra = join(root, "extra");
    const ck = await openCheckpoint(source);
    const tensors = await Promise.all(
      ck.tensors.map(async (t) => ({
        name: t.name,
        dtype: t.dtype,
        shape: [...t.shape],
        data: await ck.readTensor(t.name),
      })),
    );
    await ck.close();
    await writeCheckpoint(extra, [
      ...tensors,
      { name: "model.layers.9.mlp.gate.weight", dtype: "F32", shape: [2, 64], data: new Uint8Array(512) },
    ]);
    for (const name of ["config.json", "tokenizer.json", "tokenizer_config.json"])
      await writeFile(join(extra, name), await readFile(join(source, name)));
    await packCheckpoint(extra, join(root, "extra-packed"), 2);
    expect(await loadError(join(root, "extra-packed"))).toMatch(
      /^MODEL_WEIGHTS_MISMATCH: .*packed\.json: tensor model\.layers\.9\.mlp\.gate\.weight is in the checkpoint but no layer/,
    );
  });

  it("refuses a rank count that does not divide the experts, naming the tensor", async () => {
    await expect(packCheckpoint(source, join(root, "p3"), 3)).rejects.toMatchObject({
      code: "PACKED_RANKS_INDIVISIBLE",
    });
  });

  it("keeps CRC-32 of every shard in the manifest", async () => {
    const { manifest, rankPaths } = await openPacked(packed);
    const file = await readFile(rankPaths[1] as string);
    for (const t of manifest.tensors) {
      const s = t.shards[1];
      if (s !== undefined) expect(crc32(file.subarray(s.offset, s.offset + s.bytes))).toBe(s.crc32);
    }
  });
});
