import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { float32ToBf16 } from "./bf16.js";
import { openCheckpoint, writeCheckpoint } from "./checkpoint.js";
import { type ConvertProgress, convertCheckpoint } from "./convert.js";
import { counterpart, detectLogicalTensors, type LogicalTensor, readLogicalTensor } from "./logical.js";
import { dequantizeMxfp4, encodeMxfp4 } from "./mxfp4.js";

let root: string;
let source: string;

function random(seed: number) {
  let x = seed >>> 0;
  return () => {
    x = (x * 1664525 + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}

/** An MXFP4 checkpoint shaped like the public ones: experts as *_blocks/*_scales, the rest bf16. */
async function makeMxfp4Checkpoint(dir: string, wideSpan: boolean) {
  const rand = random(42);
  const experts = 2;
  const rows = 192;
  const groups = 6; // 192 columns: a full and a partial 128-column tile
  const blocks = new Uint8Array(experts * rows * groups * 16).map(() => Math.floor(rand() * 256));
  const scales = new Uint8Array(experts * rows * groups).map(() => 118 + Math.floor(rand() * 8));
  if (wideSpan) scales[7] = 140;
  const bf16 = (n: number) =>
    new Uint8Array(float32ToBf16(Float32Array.from({ length: n }, () => rand() * 2 - 1)).buffer);
  await writeCheckpoint(
    dir,
    [
      { name: "model.embed_tokens.weight", dtype: "BF16", shape: [16, 64], data: bf16(16 * 64) },
      {
        name: "model.layers.0.mlp.experts.gate_up_proj_blocks",
        dtype: "U8",
        shape: [experts, rows, groups, 16],
        data: blocks,
      },
      {
        name: "model.layers.0.mlp.experts.gate_up_proj_scales",
        dtype: "U8",
        shape: [experts, rows, groups],
        data: scales,
      },
      { name: "model.layers.0.input_layernorm.weight", dtype: "BF16", shape: [64], data: bf16(64) },
      { name: "model.layers.0.self_attn.q_proj.weight", dtype: "BF16", shape: [64, 64], data: bf16(64 * 64) },
    ],
    { maxShardBytes: 40_000, metadata: { format: "pt" } },
  );
  await writeFile(
    join(dir, "config.json"),
    JSON.stringify({ model_type: "gpt_oss", quantization_config: { quant_method: "mxfp4" } }),
  );
  await writeFile(join(dir, "tokenizer.json"), "{}");
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-convert-"));
  source = join(root, "src");
  await mkdir(source);
  await makeMxfp4Checkpoint(source, false);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Every logical weight of `a` decodes bit for bit to the same float32 values in `b`. */
async function expectSameValues(a: string, b: string, except: string[] = []) {
  const [x, y] = [await openCheckpoint(a), await openCheckpoint(b)];
  for (const t of detectLogicalTensors(x.tensors)) {
    if (except.includes(t.name)) continue;
    const u = counterpart(t, (name) => y.find(name));
    expect(u, t.name).toBeDefined();
    const [va, vb] = [await readLogicalTensor(x, t), await readLogicalTensor(y, u as typeof t)];
    expect(Buffer.from(vb.buffer).equals(Buffer.from(va.buffer)), t.name).toBe(true);
  }
  await x.close();
  await y.close();
}

describe("convertCheckpoint", () => {
  it("converts MXFP4 to FP8 128x128 exactly on worker threads, keeping every other weight as it was", async () => {
    const out = join(root, "fp8");
    const progress: ConvertProgress[] = [];
    const report = await convertCheckpoint(source, out, {
      to: "fp8",
      workers: 2,
      chunkBytes: 4096,
      onProgress: (p) => progress.push(p),
      verify: true,
    });
    expect(report.tensors.map((t) => [t.name, t.from, t.to, t.exact, t.quantized, t.verified])).toEqual([
      ["model.embed_tokens.weight", "BF16", "BF16", true, false, true],
      ["model.layers.0.mlp.experts.gate_up_proj", "mxfp4", "fp8-e4m3 [128x128]", true, false, true],
      ["model.layers.0.input_layernorm.weight", "BF16", "BF16", true, false, true],
      ["model.layers.0.self_attn.q_proj.weight", "BF16", "BF16", true, false, true],
    ]);
    expect(progress.at(-1)?.doneBytes).toBe(progress.at(-1)?.totalBytes);
    await expectSameValues(source, out);
    const ck = await openCheckpoint(out);
    expect(ck.indexed).toBe(true);
    // Out of MXFP4, stacked experts [experts, out, in] take a name of their own: under gpt-oss's
    // `gate_up_proj`, an HF loader would read them as its bf16 [experts, in, out].
    expect(ck.has("model.layers.0.mlp.experts.gate_up_proj")).toBe(false);
    expect(ck.tensor("model.layers.0.mlp.experts.gate_up_proj.weight_scale_inv").shape).toEqual([2, 2, 2]);
    expect(ck.tensor("model.layers.0.self_attn.q_proj.weight").dtype).toBe("BF16");
    await ck.close();
    // The config says what was written: FP8 in 128x128 tiles of power-of-two scales, and every
    // module left in BF16 under both names engines read.
    const config = JSON.parse(await readFile(join(out, "config.json"), "utf8"));
    const kept = ["model.embed_tokens", "model.layers.0.input_layernorm", "model.layers.0.self_attn.q_proj"];
    expect(config.quantization_config).toEqual({
      quant_method: "fp8",
      fmt: "e4m3",
      activation_scheme: "dynamic",
      weight_block_size: [128, 128],
      scale_fmt: "ue8m0",
      modules_to_not_convert: kept,
      ignored_layers: kept,
    });
    expect(report.quantizationConfig).toEqual(config.quantization_config);
    expect(config.stacked_weights).toEqual({
      layout: "[count, out, in]",
      weights: ["model.layers.0.mlp.experts.gate_up_proj.weight"],
    });
    expect(config.model_type).toBe("gpt_oss");
    expect(await readFile(join(out, "tokenizer.json"), "utf8")).toBe("{}");
    // The same conversion on the calling thread writes the same bytes.
    const inline = join(root, "fp8-inline");
    await convertCheckpoint(source, inline, { to: "fp8", workers: 0 });
    for (const name of (await readdir(out)).filter((n) => n.endsWith(".safetensors"))) {
      expect((await readFile(join(inline, name))).equals(await readFile(join(out, name))), name).toBe(true);
    }
  });

  it("quantizes plain weights only when asked, as lossy, and lists the rest as unquantized", async () => {
    const out = join(root, "fp8-attention");
    const report = await convertCheckpoint(source, out, { to: "fp8", workers: 0, include: /self_attn/ });
    const q = "model.layers.0.self_attn.q_proj.weight";
    expect(report.tensors.find((t) => t.name === q)).toMatchObject({
      to: "fp8-e4m3 [128x128]",
      exact: false,
      quantized: true,
    });
    expect(report.tensors.filter((t) => t.quantized).map((t) => t.name)).toEqual([q]);
    await expectSameValues(source, out, [q]);
    // bf16 to fp8 is lossy by nature: within half an E4M3 step, 2^-4 of the value (or of the
    // subnormal step 2^-9 times the scale amax / 448).
    const [src, dst] = [await openCheckpoint(source), await openCheckpoint(out)];
    const find = (c: typeof src) =>
      detectLogicalTensors(c.tensors).find((t) => t.name === q) as NonNullable<
        ReturnType<typeof detectLogicalTensors>[number]
      >;
    expect(find(dst).kind).toBe("fp8");
    const [qa, qb] = [await readLogicalTensor(src, find(src)), await readLogicalTensor(dst, find(dst))];
    const amax = Math.max(...qa.map(Math.abs));
    const worst = Math.max(
      ...qa.map((v, i) => Math.abs(v - (qb[i] as number)) - Math.abs(v) / 16 - amax / 448 / 2 ** 10),
    );
    expect(worst).toBeLessThanOrEqual(0);
    await src.close();
    await dst.close();
    const config = JSON.parse(await readFile(join(out, "config.json"), "utf8"));
    expect(config.quantization_config.scale_fmt).toBeUndefined();
    expect(config.quantization_config.modules_to_not_convert).toEqual([
      "model.embed_tokens",
      "model.layers.0.input_layernorm",
    ]);
    expect(config.quantization_config.ignored_layers).toEqual(
      config.quantization_config.modules_to_not_convert,
    );
  });

  it("honours the source's modules_to_not_convert even when asked to quantize everything", async () => {
    const dir = join(root, "src-skip");
    await mkdir(dir);
    await makeMxfp4Checkpoint(dir, false);
    await writeFile(
      join(dir, "config.json"),
      JSON.stringify({
        model_type: "gpt_oss",
        quantization_config: {
          quant_method: "mxfp4",
          modules_to_not_convert: ["model.layers.*.self_attn", "model.embed_tokens", "lm_head"],
        },
      }),
    );
    const out = join(root, "skip-fp8");
    const report = await convertCheckpoint(dir, out, { to: "fp8", workers: 0, include: /./, exclude: /^$/ });
    expect(report.tensors.filter((t) => !t.exact).map((t) => t.name)).toEqual([]);
    await expectSameValues(dir, out);
    const ck = await openCheckpoint(out);
    expect(ck.tensor("model.layers.0.self_attn.q_proj.weight").dtype).toBe("BF16");
    await ck.close();
  });

  it("keeps the per-32 scales with --fp8-block block32, exactly", async () => {
    const out = join(root, "fp8-b32");
    const report = await convertCheckpoint(source, out, {
      to: "fp8",
      fp8Block: "block32",
      include: /experts/,
    });
    expect(report.tensors.every((t) => t.exact)).toBe(true);
    await expectSameValues(source, out);
    const config = JSON.parse(await readFile(join(out, "config.json"), "utf8"));
    expect(config.quantization_config.weight_block_size).toEqual([1, 32]);
    expect(config.quantization_config.scale_fmt).toBe("ue8m0");
    // Converting that FP8 again keeps its 1x32 scales, and the config still says so.
    const again = join(root, "fp8-b32-again");
    await convertCheckpoint(out, again, { to: "fp8", workers: 0, verify: true });
    const config2 = JSON.parse(await readFile(join(again, "config.json"), "utf8"));
    expect(config2.quantization_config.weight_block_size).toEqual([1, 32]);
    expect(config2.quantization_config.modules_to_not_convert).toContain("model.layers.0.self_attn.q_proj");
  });

  it("names tensors that cannot be exact, leaves no output, and converts them only when allowed", async () => {
    const wide = join(root, "wide");
    await mkdir(wide);
    await makeMxfp4Checkpoint(wide, true);
    const out = join(root, "wide-fp8");
    const progress: ConvertProgress[] = [];
    await expect(
      convertCheckpoint(wide, out, { to: "fp8", workers: 0, onProgress: (p) => progress.push(p) }),
    ).rejects.toThrow(/gate_up_proj: 1 tile\(s\) of 128x128 span up to 2[0-9] binades/);
    // Found from the scales before any conversion work started.
    expect(progress).toEqual([]);
    expect((await readdir(root)).filter((n) => n.includes("wide-fp8"))).toEqual([]);
    const report = await convertCheckpoint(wide, out, { to: "fp8", workers: 0, allowInexact: true });
    const experts = report.tensors.find((t) => t.name.endsWith("gate_up_proj"));
    expect(experts?.exact).toBe(false);
    expect(experts?.maxAbsError).toBeGreaterThan(0);
  });

  it("dequantizes MXFP4 to bf16 and encodes bf16 back to MXFP4 with the same values", async () => {
    const bf16 = join(root, "bf16");
    await convertCheckpoint(source, bf16, { to: "bf16", workers: 0, chunkBytes: 1000, verify: true });
    await expectSameValues(source, bf16);
    const config = JSON.parse(await readFile(join(bf16, "config.json"), "utf8"));
    expect(config.quantization_config).toBeUndefined();
    expect(config.stacked_weights.weights).toEqual(["model.layers.0.mlp.experts.gate_up_proj.weight"]);
    const back = join(root, "mxfp4");
    const report = await convertCheckpoint(bf16, back, {
      to: "mxfp4",
      workers: 2,
      verify: true,
      include: /experts|self_attn/,
    });
    expect(report.tensors.filter((t) => t.verified).map((t) => t.name)).toEqual([
      "model.embed_tokens.weight",
      "model.layers.0.input_layernorm.weight",
    ]);
    // MXFP4 weights copied into an MXFP4 target are checked as the weight they form.
    const same = await convertCheckpoint(source, join(root, "mxfp4-again"), {
      to: "mxfp4",
      workers: 0,
      verify: true,
      include: /^$/,
    });
    expect(same.tensors.every((t) => t.exact && t.verified)).toBe(true);
    expect(report.tensors.filter((t) => t.to === "mxfp4").map((t) => t.name)).toEqual([
      "model.layers.0.mlp.experts.gate_up_proj.weight",
      "model.layers.0.self_attn.q_proj.weight",
    ]);
    // Back in MXFP4, the experts have gpt-oss's names again, and the config no list of stacked weights.
    expect(JSON.parse(await readFile(join(back, "config.json"), "utf8")).stacked_weights).toBeUndefined();
    // Values that came from MXFP4 re-encode to the same values.
    const [a, b] = [await openCheckpoint(source), await openCheckpoint(back)];
    const name = "model.layers.0.mlp.experts.gate_up_proj";
    const before = dequantizeMxfp4(
      await a.readTensor(`${name}_blocks`),
      await a.readTensor(`${name}_scales`),
    );
    const after = dequantizeMxfp4(await b.readTensor(`${name}_blocks`), await b.readTensor(`${name}_scales`));
    expect(Buffer.from(after.buffer).equals(Buffer.from(before.buffer))).toBe(true);
    // The bf16 projection is encoded as the spec's encoder does.
    const q = detectLogicalTensors(a.tensors).find(
      (t) => t.name === "model.layers.0.self_attn.q_proj.weight",
    );
    const want = encodeMxfp4(await readLogicalTensor(a, q as NonNullable<typeof q>));
    expect(
      Buffer.from(await b.readTensor("model.layers.0.self_attn.q_proj.weight_blocks")).equals(
        Buffer.from(want.blocks),
      ),
    ).toBe(true);
    await a.close();
    await b.close();
    const config2 = JSON.parse(await readFile(join(back, "config.json"), "utf8"));
    expect(config2.quantization_config.quant_method).toBe("mxfp4");
    expect(config2.quantization_config.modules_to_not_convert).toEqual([
      "model.embed_tokens",
      "model.layers.0.input_layernorm",
    ]);
  });

  it("names the file and tensor of a NaN scale, leaving no output", async () => {
    const dir = join(root, "nan");
    await writeCheckpoint(dir, [
      { name: "w_blocks", dtype: "U8", shape: [2, 1, 16], data: new Uint8Array(32) },
      { name: "w_scales", dtype: "U8", shape: [2, 1], data: new Uint8Array([127, 255]) },
    ]);
    for (const to of ["bf16", "fp8"] as const) {
      // chunks of one row: the block is still counted from the tensor's start
      await expect(
        // fp8 on a worker thread: its error crosses back with code and message intact
        convertCheckpoint(dir, join(root, `nan-${to}`), {
          to,
          workers: to === "fp8" ? 1 : 0,
          chunkBytes: 17,
        }),
      ).rejects.toMatchObject({
        code: "MXFP4_NAN_SCALE",
        message: expect.stringMatching(/nan\/model\.safetensors#w: block 1 has the NaN scale/),
      });
    }
    expect((await readdir(root)).filter((n) => n.startsWith("nan-"))).toEqual([]);
  });

  it("stops every shard's writes on a failure in one shard, leaving nothing behind", async () => {
    const dir = join(root, "nan-shards");
    const groups = 64;
    const tensors = [0, 1, 2].flatMap((t) => {
      const scales = new Uint8Array(64 * groups).fill(127);
      if (t === 2) scales[40 * groups] = 255;
      return [
        {
          name: `w${t}_blocks`,
          dtype: "U8" as const,
          shape: [64, groups, 16],
          data: new Uint8Array(64 * groups * 16).fill(0x35),
        },
        { name: `w${t}_scales`, dtype: "U8" as const, shape: [64, groups], data: scales },
      ];
    });
    await writeCheckpoint(dir, tensors, { maxShardBytes: 70_000 });
    expect((await readdir(dir)).filter((n) => n.endsWith(".safetensors"))).toHaveLength(3);
    const out = join(root, "nan-shards-out");
    await expect(
      convertCheckpoint(dir, out, { to: "fp8", fp8Block: "block32", workers: 1, chunkBytes: 4096 }),
    ).rejects.toMatchObject({
      code: "MXFP4_NAN_SCALE",
      message: expect.stringMatching(/model-00003-of-00003\.safetensors#w2: block 2560 has the NaN scale/),
    });
    expect((await readdir(root)).filter((n) => n.startsWith("nan-shards-out"))).toEqual([]);
  });

  it("refuses an output directory that exists", async () => {
    await expect(convertCheckpoint(source, source, { to: "bf16" })).rejects.toThrow(/already exists/);
  });

  it("refuses a worker count that is not a whole number, before writing anything", async () => {
    for (const workers of [Number.NaN, -1, 1.5]) {
      const out = join(root, `bad-workers-${workers}`);
      await expect(convertCheckpoint(source, out, { to: "fp8", workers })).rejects.toThrow(/whole number/);
      expect(existsSync(out)).toBe(false);
    }
  });

  it("refuses NaN and infinities in a weight to quantize, naming tensor and element, unless allowed", async () => {
    const dir = join(root, "non-finite");
    const values = Float32Array.from({ length: 128 * 64 }, (_, i) => Math.sin(i));
    values[300] = Number.NaN;
    values[700] = Number.POSITIVE_INFINITY;
    await writeCheckpoint(dir, [
      {
        name: "w.weight",
        dtype: "BF16",
        shape: [128, 64],
        data: new Uint8Array(float32ToBf16(values).buffer),
      },
    ]);
    await expect(
      convertCheckpoint(dir, join(root, "non-finite-fp8"), { to: "fp8", workers: 1, include: /./ }),
    ).rejects.toMatchObject({
      code: "NOT_FINITE",
      message: expect.stringMatching(/non-finite\/model\.safetensors#w\.weight: element 300 is NaN/),
    });
    expect(existsSync(join(root, "non-finite-fp8"))).toBe(false);
    const out = join(root, "non-finite-allowed");
    await convertCheckpoint(dir, out, { to: "fp8", workers: 0, include: /./, allowNonFinite: true });
    const ck = await openCheckpoint(out);
    const decoded = await readLogicalTensor(ck, detectLogicalTensors(ck.tensors)[0] as LogicalTensor);
    await ck.close();
    // The tile keeps a finite scale: NaN stays NaN, infinity saturates, the rest stay close.
    expect(decoded[300]).toBeNaN();
    expect(decoded[700]).toBeCloseTo(1, 1);
    const rest = [...decoded.keys()].filter((i) => i !== 300 && i !== 700);
    expect(rest.every((i) => Math.abs((decoded[i] as number) - Math.sin(i)) < 0.07)).toBe(true);
  });

  it("converts a 1-D MXFP4 weight to bf16 and refuses it cleanly for FP8 block scales", async () => {
    const dir = join(root, "one-d");
    await writeCheckpoint(dir, [
      {
        name: "v_blocks",
        dtype: "U8",
        shape: [2, 16],
        data: Uint8Array.from({ length: 32 }, (_, i) => i * 9),
      },
      { name: "v_scales", dtype: "U8", shape: [2], data: new Uint8Array([126, 130]) },
    ]);
    await expect(
      convertCheckpoint(dir, join(root, "one-d-fp8"), { to: "fp8", workers: 0 }),
    ).rejects.toMatchObject({
      code: "NOT_REPRESENTABLE",
      message: expect.stringMatching(/one-d\/model\.safetensors#v: a 1-D MXFP4 weight/),
    });
    const out = join(root, "one-d-bf16");
    await convertCheckpoint(dir, out, { to: "bf16", workers: 0, verify: true });
    await expectSameValues(dir, out);
  });

  it("refuses an output that would hold two FP8 scale layouts, before writing it", async () => {
    const dir = join(root, "mixed");
    await writeCheckpoint(dir, [
      { name: "a.weight", dtype: "F8_E4M3", shape: [4, 32], data: new Uint8Array(128).fill(0x38) },
      {
        name: "a.weight_scale_inv",
        dtype: "F32",
        shape: [1, 1],
        data: new Uint8Array(new Float32Array([1]).buffer),
      },
      { name: "b_blocks", dtype: "U8", shape: [4, 1, 16], data: new Uint8Array(64).fill(0x22) },
      { name: "b_scales", dtype: "U8", shape: [4, 1], data: new Uint8Array(4).fill(127) },
    ]);
    await expect(
      convertCheckpoint(dir, join(root, "mixed-b32"), { to: "fp8", fp8Block: "block32", workers: 0 }),
    ).rejects.toMatchObject({ code: "MIXED_FP8_BLOCKS", message: expect.stringMatching(/128x128 and 1x32/) });
    expect(existsSync(join(root, "mixed-b32"))).toBe(false);
    const report = await convertCheckpoint(dir, join(root, "mixed-tiles"), {
      to: "fp8",
      workers: 0,
      verify: true,
    });
    expect(report.quantizationConfig).toMatchObject({ weight_block_size: [128, 128] });
    expect(report.quantizationConfig?.scale_fmt).toBeUndefined();
  });

  it("keeps its open files bounded whatever the number of shards, converting and verifying", async () => {
    const dir = join(root, "many-shards");
    const shards = 300;
    await writeCheckpoint(
      dir,
      Array.from({ length: shards }, (_, i) => ({
        name: `layers.${i}.w`,
        dtype: "F32" as const,
        shape: [2, 2],
        data: new Uint8Array(new Float32Array([i, 1, 2, 3]).buffer),
      })),
      { maxShardBytes: 16 },
    );
    const openFiles = async () => (await readdir("/proc/self/fd")).length;
    const before = await openFiles();
    let most = 0;
    const seen: Promise<void>[] = [];
    await convertCheckpoint(dir, join(root, "many-shards-bf16"), {
      to: "bf16",
      workers: 2,
      chunkBytes: 8,
      verify: true,
      onProgress: () => {
        seen.push(
          openFiles().then((n) => {
            most = Math.max(most, n - before);
          }),
        );
      },
    });
    await Promise.all(seen);
    // Two worker threads and this one, each with its bounded readers, and a few shards written at
    // once: about 100, where one file per shard per thread would be well over 300.
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThan(shards / 2);
    expect(await readdir(join(root, "many-shards-bf16"))).toHaveLength(shards + 1);
  });

  it("says a destination cannot be written, without a stack trace or leftovers", async () => {
    // /sys refuses new directories even to root, as a read-only mount would.
    const out = "/sys/bringup-convert-test";
    await expect(convertCheckpoint(source, out, { to: "fp8", workers: 0 })).rejects.toMatchObject({
      code: "OUTPUT_NOT_WRITABLE",
      message: expect.stringMatching(
        /^\/sys\/bringup-convert-test: cannot write there .*choose a destination/,
      ),
    });
  });

  it("brings MXFP4 back from FP8 bit for bit, through 1x32 scales and through 128x128 tiles", async () => {
    /** Every tensor of a and b, by name, byte for byte. */
    const expectSameBytes = async (a: string, b: string) => {
      const [x, y] = [await openCheckpoint(a), await openCheckpoint(b)];
      expect(y.tensors.map((t) => t.name).sort()).toEqual(x.tensors.map((t) => t.name).sort());
      for (const t of x.tensors)
        expect(Buffer.from(await y.readTensor(t.name)).equals(await x.readTensor(t.name)), t.name).toBe(true);
      await x.close();
      await y.close();
    };
    // Through 1x32: each block's own scale comes back, whatever scale the source chose.
    await convertCheckpoint(join(root, "fp8-b32"), join(root, "b32-back"), {
      to: "mxfp4",
      workers: 1,
      verify: true,
    });
    await expectSameBytes(source, join(root, "b32-back"));
    // Through 128x128 tiles: the scale an MXFP4 encoder chooses comes back.
    const rand = random(7);
    const values = Float32Array.from(
      { length: 3 * 256 * 96 },
      () => (rand() - 0.5) * 2 ** Math.floor(rand() * 6),
    );
    const { blocks, scales } = encodeMxfp4(values);
    const dir = join(root, "encoded");
    await writeCheckpoint(dir, [
      { name: "e.w_blocks", dtype: "U8", shape: [3, 256, 3, 16], data: blocks },
      { name: "e.w_scales", dtype: "U8", shape: [3, 256, 3], data: scales },
    ]);
    await convertCheckpoint(dir, join(root, "encoded-fp8"), { to: "fp8", workers: 0 });
    const report = await convertCheckpoint(join(root, "encoded-fp8"), join(root, "encoded-back"), {
      to: "mxfp4",
      workers: 0,
      verify: true,
    });
    expect(report.tensors).toMatchObject([
      { name: "e.w.weight", from: "fp8-e4m3 [128x128]", to: "mxfp4", exact: true, verified: true },
    ]);
    await expectSameBytes(dir, join(root, "encoded-back"));
    const config = JSON.parse(await readFile(join(root, "encoded-back", "config.json"), "utf8"));
    expect(config.quantization_config).toEqual({
      quant_method: "mxfp4",
      modules_to_not_convert: [],
      ignored_layers: [],
    });
  });

  it("writes a square stacked down_proj out of MXFP4 under a name no gpt-oss loader reads transposed", async () => {
    // [experts, out, in] with out = in: under gpt-oss's bf16 name `down_proj` ([experts, in, out]),
    // a loader would take it transposed and find nothing wrong with its shape.
    const rand = random(11);
    const values = Float32Array.from({ length: 2 * 32 * 32 }, () => (rand() - 0.5) * 8);
    const { blocks, scales } = encodeMxfp4(values);
    const dir = join(root, "square");
    await writeCheckpoint(dir, [
      { name: "mlp.experts.down_proj_blocks", dtype: "U8", shape: [2, 32, 1, 16], data: blocks },
      { name: "mlp.experts.down_proj_scales", dtype: "U8", shape: [2, 32, 1], data: scales },
      { name: "mlp.router.weight", dtype: "U8", shape: [2, 32], data: new Uint8Array(64) },
    ]);
    for (const [to, fp8Block] of [["bf16"], ["fp8", "block32"], ["fp8", "tile128"]] as const) {
      const out = join(root, `square-${to}-${fp8Block}`);
      await convertCheckpoint(dir, out, { to, ...(fp8Block ? { fp8Block } : {}), workers: 0, verify: true });
      const ck = await openCheckpoint(out);
      expect(ck.tensors.map((t) => t.name).filter((n) => n.includes("experts"))).toEqual([
        "mlp.experts.down_proj.weight",
        ...(to === "fp8" ? ["mlp.experts.down_proj.weight_scale_inv"] : []),
      ]);
      expect(ck.find("mlp.router.weight")?.shape).toEqual([2, 32]);
      await ck.close();
      const config = JSON.parse(await readFile(join(out, "config.json"), "utf8"));
      expect(config.stacked_weights).toEqual({
        layout: "[count, out, in]",
        weights: ["mlp.experts.down_proj.weight"],
      });
      // Another conversion keeps the name, and the config still says it.
      const again = `${out}-again`;
      await convertCheckpoint(out, again, { to: "bf16", workers: 0, verify: true });
      const kept = JSON.parse(await readFile(join(again, "config.json"), "utf8"));
      expect(kept.stacked_weights.weights).toEqual(["mlp.experts.down_proj.weight"]);
      await expectSameValues(dir, again);
    }
    // A plain stacked weight under gpt-oss's name may be either layout: quantizing it is refused.
    const plain = join(root, "square-plain");
    await writeCheckpoint(plain, [
      {
        name: "mlp.experts.down_proj",
        dtype: "F32",
        shape: [2, 32, 32],
        data: new Uint8Array(values.buffer),
      },
    ]);
    for (const to of ["fp8", "mxfp4"] as const)
      await expect(
        convertCheckpoint(plain, join(root, `square-plain-${to}`), { to, workers: 0, include: /experts/ }),
      ).rejects.toMatchObject({
        code: "STACKED_LAYOUT_UNKNOWN",
        message: expect.stringMatching(
          /down_proj: a stacked weight \[2, 32, 32\] whose name does not say its layout/,
        ),
      });
  });

  it("refuses FP8 values that MXFP4 cannot carry, naming tensor and element", async () => {
    await expect(
      convertCheckpoint(join(root, "fp8-attention"), join(root, "attention-mxfp4"), {
        to: "mxfp4",
        workers: 0,
      }),
    ).rejects.toMatchObject({
      code: "NOT_REPRESENTABLE",
      message: expect.stringMatching(
        /#model\.layers\.0\.self_attn\.q_proj\.weight: element \d+ is .* no MXFP4 block scale carries exactly/,
      ),
    });
    expect(existsSync(join(root, "attention-mxfp4"))).toBe(false);
  });

  it("makes bf16 of FP8 with float32 scales exactly where it can, and says where it cannot", async () => {
    const fp8 = (scale: number) => {
      const codes = Uint8Array.from({ length: 128 * 128 }, (_, i) => (i * 37) % 126);
      return [
        { name: "w.weight", dtype: "F8_E4M3" as const, shape: [128, 128], data: codes },
        {
          name: "w.weight_scale_inv",
          dtype: "F32" as const,
          shape: [1, 1],
          data: new Uint8Array(new Float32Array([scale]).buffer),
        },
      ];
    };
    // 0.75 has two significant bits: every E4M3 value times it fits bf16's eight.
    const exact = join(root, "ds-exact");
    await writeCheckpoint(exact, fp8(0.75));
    const ok = await convertCheckpoint(exact, join(root, "ds-exact-bf16"), {
      to: "bf16",
      workers: 1,
      verify: true,
    });
    expect(ok.tensors).toMatchObject([{ name: "w.weight", to: "BF16", exact: true, verified: true }]);
    // A scale as DeepSeek's checkpoints have (amax / 448) gives products bf16 must round.
    const rounded = join(root, "ds-rounded");
    await writeCheckpoint(rounded, fp8(0.0123456789));
    await expect(
      convertCheckpoint(rounded, join(root, "ds-rounded-bf16"), { to: "bf16", workers: 1, verify: true }),
    ).rejects.toMatchObject({
      code: "NOT_REPRESENTABLE",
      message: expect.stringMatching(
        /ds-rounded\/model\.safetensors#w\.weight: element \d+ is .* which bf16 cannot hold exactly/,
      ),
    });
    const allowed = await convertCheckpoint(rounded, join(root, "ds-rounded-bf16"), {
      to: "bf16",
      workers: 0,
      verify: true,
      allowInexact: true,
    });
    const [w] = allowed.tensors;
    expect(w).toMatchObject({ exact: false });
    expect(w?.roundedValues).toBeGreaterThan(1000);
    // Half a unit in the last of bf16's 8 significant bits: at most 2^-8 of the value.
    expect(w?.maxRelError).toBeGreaterThan(0);
    expect(w?.maxRelError).toBeLessThanOrEqual(2 ** -8);
  });
});

describe("converting our own outputs again", () => {
  /** An MXFP4 checkpoint whose one weight has a single row of 32 columns, beside a wider one. */
  async function tinyRows(dir: string) {
    const wide = encodeMxfp4(
      Float32Array.from({ length: 4 * 64 }, (_, i) => ((i % 13) - 6) / 4),
      "w",
    );
    const row = encodeMxfp4(
      Float32Array.from({ length: 32 }, (_, i) => (i - 16) / 8),
      "r",
    );
    await writeCheckpoint(dir, [
      { name: "wide.weight_blocks", dtype: "U8", shape: [4, 2, 16], data: wide.blocks },
      { name: "wide.weight_scales", dtype: "U8", shape: [4, 2], data: wide.scales },
      { name: "row.weight_blocks", dtype: "U8", shape: [1, 1, 16], data: row.blocks },
      { name: "row.weight_scales", dtype: "U8", shape: [1, 1], data: row.scales },
    ]);
    await writeFile(
      join(dir, "config.json"),
      JSON.stringify({ quantization_config: { quant_method: "mxfp4" } }),
    );
  }

  it("converts a block32 FP8 output with a one-row weight to FP8 again, keeping its layout and scale_fmt", async () => {
    const dir = join(root, "again-src");
    await tinyRows(dir);
    const first = await convertCheckpoint(dir, join(root, "again-b32"), {
      to: "fp8",
      fp8Block: "block32",
      workers: 0,
    });
    expect(first.quantizationConfig).toMatchObject({ weight_block_size: [1, 32], scale_fmt: "ue8m0" });
    for (const fp8Block of ["block32", "tile128"] as const) {
      const again = await convertCheckpoint(join(root, "again-b32"), join(root, `again-${fp8Block}`), {
        to: "fp8",
        fp8Block,
        workers: 0,
        verify: true,
      });
      expect(again.quantizationConfig).toMatchObject({ weight_block_size: [1, 32], scale_fmt: "ue8m0" });
      expect(again.tensors.every((t) => t.exact)).toBe(true);
    }
    // Tiles of 128x128 written, then converted again: the one-row weight fits that layout too.
    await convertCheckpoint(dir, join(root, "again-t128"), { to: "fp8", workers: 0 });
    const tiles = await convertCheckpoint(join(root, "again-t128"), join(root, "again-t128-2"), {
      to: "fp8",
      workers: 0,
    });
    expect(tiles.quantizationConfig).toMatchObject({ weight_block_size: [128, 128], scale_fmt: "ue8m0" });
  });

  it("writes an empty shard for a source without tensors, naming no temporary directory", async () => {
    const dir = join(root, "empty-src");
    await writeCheckpoint(dir, []);
    const report = await convertCheckpoint(dir, join(root, "empty-out"), {
      to: "bf16",
      workers: 0,
      verify: true,
    });
    expect(report.tensors).toEqual([]);
    expect(await readdir(join(root, "empty-out"))).toEqual(["model.safetensors"]);
    const out = await openCheckpoint(join(root, "empty-out"));
    expect(out.tensors).toEqual([]);
    await out.close();
  });

  it("refuses allowNonFinite where nothing could use it", async () => {
    for (const to of ["mxfp4", "bf16"] as const) {
      await expect(
        convertCheckpoint(join(root, "again-src"), join(root, "never"), { to, allowNonFinite: true }),
      ).rejects.toMatchObject({ code: "BAD_OPTION", message: expect.stringMatching(/FP8 only/) });
    }
  });
});
