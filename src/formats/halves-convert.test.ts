import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openCheckpoint, writeCheckpoint } from "./checkpoint.js";
import { convertWeights } from "./halves-convert.js";
import { detectLogicalTensors, readLogicalTensor } from "./logical.js";
import { dequantizeMxfp4 } from "./mxfp4.js";
import { fromHalvesInPlace, toHalves } from "./mxfp4-halves.js";
import { verifyCheckpoints } from "./verify.js";

let root: string;
const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 37 + seed) & 255);
const SCALES = Uint8Array.from({ length: 16 }, (_, i) => 118 + (i % 9));

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-halves-"));
  // 2 experts of [4, 64] in MXFP4, sharded; a plain projection and a norm.
  await writeCheckpoint(
    join(root, "src"),
    [
      { name: "l0.experts.gate_up_proj_blocks", dtype: "U8", shape: [2, 4, 2, 16], data: bytes(256, 1) },
      { name: "l0.experts.gate_up_proj_scales", dtype: "U8", shape: [2, 4, 2], data: SCALES },
      { name: "l0.o_proj.weight", dtype: "BF16", shape: [3, 5], data: bytes(30, 7) },
      { name: "l0.norm.weight", dtype: "F32", shape: [4], data: bytes(16, 3) },
    ],
    { maxShardBytes: 200 },
  );
  await writeFile(join(root, "src", "config.json"), '{"model_type":"x"}');
  await writeCheckpoint(join(root, "dense"), [
    { name: "l0.experts.down_proj", dtype: "F32", shape: [2, 4, 4], data: bytes(128, 5) },
  ]);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function stored(dir: string) {
  const ck = await openCheckpoint(dir);
  try {
    return ck.tensors.map((t) => t.name).sort();
  } finally {
    await ck.close();
  }
}

describe("MXFP4 halves order", () => {
  it("puts value v(i) in byte i's low nibble and value v(i) + 16 in its high one, and back", () => {
    // Values 0..31 of one block as codes (mod 16), in OCP order: byte j = v[2j] | v[2j+1] << 4.
    const values = Array.from({ length: 32 }, (_, v) => (v * 5 + 3) & 15);
    const ocp = Uint8Array.from(
      { length: 16 },
      (_, j) => (values[2 * j] as number) | ((values[2 * j + 1] as number) << 4),
    );
    const halves = toHalves(ocp);
    // The order mxfp4-decode.wat states: v = 0 4 1 5 2 6 3 7 8 12 9 13 10 14 11 15.
    [0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15].forEach((v, i) => {
      expect((halves[i] as number) & 15).toBe(values[v]);
      expect((halves[i] as number) >> 4).toBe(values[v + 16]);
    });
    const all = bytes(16 * 64, 9);
    expect(Array.from(fromHalvesInPlace(toHalves(all)))).toEqual(Array.from(all));
  });

  it("convert --layout halves writes W_hblocks and the marker, proven value for value", async () => {
    const out = join(root, "halves");
    const report = await convertWeights(join(root, "src"), out, {
      to: "mxfp4",
      layout: "halves",
      workers: 0,
    });
    expect(report.tensors.find((t) => t.name === "l0.experts.gate_up_proj")).toMatchObject({
      to: "mxfp4 (halves order)",
      exact: true,
      verified: true,
    });
    expect(await stored(out)).toEqual([
      "l0.experts.gate_up_proj_hblocks",
      "l0.experts.gate_up_proj_scales",
      "l0.norm.weight",
      "l0.o_proj.weight",
    ]);
    expect(JSON.parse(await readFile(join(out, "config.json"), "utf8"))).toEqual({
      model_type: "x",
      mxfp4_layout: "halves",
    });
    const verified = await verifyCheckpoints(join(root, "src"), out, { workers: 0 });
    expect(verified.ok).toBe(true);
    const expert = verified.weights.find((w) => w.name === "l0.experts.gate_up_proj");
    expect(expert).toMatchObject({
      formatA: "mxfp4",
      formatB: "mxfp4 (halves order)",
      valuesIdentical: true,
      bytesIdentical: false,
    });
    // Decoded through the halves reader, the values are OCP's decoded directly.
    const ck = await openCheckpoint(out);
    try {
      const weight = detectLogicalTensors(ck.tensors).find((w) => w.name === "l0.experts.gate_up_proj");
      expect(weight).toMatchObject({ kind: "mxfp4", order: "halves" });
      const decoded = await readLogicalTensor(ck, weight as NonNullable<typeof weight>);
      expect(Array.from(decoded)).toEqual(Array.from(dequantizeMxfp4(bytes(256, 1), SCALES)));
    } finally {
      await ck.close();
    }
  });

  it("streams a tensor past one piece (16 MiB) through, proven value for value", async () => {
    // 2 experts of [520, 32768]: just over 16 MiB of codes.
    const shape = [2, 520, 1024, 16];
    const codes = 2 * 520 * 1024 * 16;
    await writeCheckpoint(join(root, "big"), [
      { name: "experts.down_proj_blocks", dtype: "U8", shape, data: bytes(codes, 5) },
      {
        name: "experts.down_proj_scales",
        dtype: "U8",
        shape: shape.slice(0, -1),
        data: bytes(codes / 16, 2).map((b) => 100 + (b % 40)),
      },
    ]);
    const report = await convertWeights(join(root, "big"), join(root, "big-halves"), {
      to: "mxfp4",
      layout: "halves",
      workers: 0,
    });
    expect(report.tensors.map((t) => [t.name, t.verified])).toEqual([["experts.down_proj", true]]);
    const ck = await openCheckpoint(join(root, "big-halves"));
    try {
      const stored = await ck.readTensor("experts.down_proj_hblocks");
      expect(Buffer.from(stored).equals(Buffer.from(toHalves(bytes(codes, 5))))).toBe(true);
    } finally {
      await ck.close();
    }
  });

  it("one corrupted byte of one re-laid-out expert fails verification naming that weight", async () => {
    const out = join(root, "corrupt");
    await convertWeights(join(root, "src"), out, { to: "mxfp4", layout: "halves", workers: 0 });
    const ck = await openCheckpoint(out);
    const t = ck.tensor("l0.experts.gate_up_proj_hblocks");
    await ck.close();
    const file = await readFile(t.file);
    // Expert 1's first code byte (file offset: data start + the tensor's offset + one expert's bytes).
    const header = Number(file.readBigUInt64LE(0));
    const at = 8 + header + (t.dataOffsets[0] as number) + 128;
    file[at] = (file[at] as number) ^ 0x11;
    await writeFile(t.file, file);
    const report = await verifyCheckpoints(join(root, "src"), out, { workers: 0 });
    expect(report.ok).toBe(false);
    expect(report.weights.filter((w) => !w.valuesIdentical).map((w) => w.name)).toEqual([
      "l0.experts.gate_up_proj",
    ]);
  });

  it("a re-laid-out checkpoint missing a scale is refused naming the tensor", async () => {
    const out = join(root, "no-scales");
    await convertWeights(join(root, "src"), out, { to: "mxfp4", layout: "halves", workers: 0 });
    const ck = await openCheckpoint(out);
    const kept = [];
    try {
      for (const t of ck.tensors.filter((t) => !t.name.endsWith("_scales")))
        kept.push({ name: t.name, dtype: t.dtype, shape: [...t.shape], data: await ck.readTensor(t.name) });
    } finally {
      await ck.close();
    }
    await rm(out, { recursive: true });
    await writeCheckpoint(out, kept);
    await expect(verifyCheckpoints(join(root, "src"), out, { workers: 0 })).rejects.toThrow(
      /l0\.experts\.gate_up_proj_hblocks: MXFP4 blocks need l0\.experts\.gate_up_proj_scales, .* which is missing; .* re-lay out the original checkpoint again/,
    );
  });

  it("stopped (Ctrl-C), leaves nothing and says so", async () => {
    const stop = new AbortController();
    stop.abort();
    const out = join(root, "stopped");
    await expect(
      convertWeights(join(root, "src"), out, {
        to: "mxfp4",
        layout: "halves",
        workers: 0,
        signal: stop.signal,
      }),
    ).rejects.toMatchObject({ code: "INTERRUPTED" });
    await expect(stat(out)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("refuses stacked experts that are not MXFP4, and halves without --to mxfp4, by name", async () => {
    await expect(
      convertWeights(join(root, "dense"), join(root, "no"), { to: "mxfp4", layout: "halves", workers: 0 }),
    ).rejects.toThrow(/no MXFP4 weight/);
    await expect(
      convertWeights(join(root, "src"), join(root, "no"), { to: "fp8", layout: "halves", workers: 0 }),
    ).rejects.toThrow(/--to mxfp4/);
  });
});
