import { mkdtemp, readFile, rm, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { toLanesInPlace } from "../../formats/fp8-lanes.js";
import { toQuadsInPlace } from "../../formats/fp8-quads.js";
import { toHalves } from "../../formats/mxfp4-halves.js";
import { packCheckpoint } from "../../formats/packed-write.js";
import { Engine } from "../engine.js";
import { wasmArena } from "../kernels/wasm-arena.js";
import type { StepOutput } from "../request.js";
import { shareArray, type Weight } from "../tensor/weight.js";
import { readCorpus } from "../tiny/corpus.js";
import { generateTinyModel, tinyFilesToModel } from "../tiny/generate.js";
import { findTinySize, type TinySize } from "../tiny/sizes.js";
import { writeTinyModel } from "../tiny/write.js";
import type { HostTensor } from "./host-tensor.js";
import { loadModel } from "./load-model.js";

/** Every matmul weight of `dtype` reachable from `root` (objects with a dtype, rows, cols and data). */
function matmulWeights(root: unknown, dtype = "f32", seen = new Set<object>()): Weight[] {
  if (typeof root !== "object" || root === null || seen.has(root) || ArrayBuffer.isView(root)) return [];
  seen.add(root);
  const w = root as Partial<Weight>;
  if (w.dtype === dtype && typeof w.rows === "number" && typeof w.cols === "number" && w.data)
    return [w as Weight];
  return Object.values(root).flatMap((v) => matmulWeights(v, dtype, seen));
}

const root = await mkdtemp(join(tmpdir(), "bringup-load-"));
afterAll(() => rm(root, { recursive: true, force: true }));
const corpus = await readCorpus();

async function run(engine: Engine, prompt: number[]): Promise<StepOutput[]> {
  const out: StepOutput[] = [];
  for await (const o of engine.submit({
    promptTokenIds: prompt,
    maxTokens: 6,
    sampling: { temperature: 0 },
    logprobs: 1,
    ignoreEos: true,
  }))
    out.push(o);
  return out;
}

describe("loadModel", () => {
  for (const [size, dtype] of [
    ["tiny", "f32"],
    ["tiny-moe", "bf16"],
  ] as const) {
    it(`loads a written ${size} (${dtype}) directory that runs exactly like the in-memory model`, async () => {
      const files = generateTinyModel(findTinySize(size) as TinySize, corpus, { seed: 5, dtype });
      const dir = join(root, `${size}-${dtype}`);
      await writeTinyModel(dir, files);
      const loaded = await loadModel(dir);
      const memory = await tinyFilesToModel(size, files);
      expect(loaded.name).toBe(`${size}-${dtype}`);
      expect(loaded.numParameters).toBe(memory.numParameters);
      const a = new Engine(loaded, { threads: 1 });
      const b = new Engine(memory, { threads: 1 });
      const prompt = loaded.tokenizer.encode("Write down the boats.");
      expect(await run(a, prompt)).toEqual(await run(b, prompt));
      await Promise.all([a.close(), b.close()]);
    });
  }

  it("places every matmul weight in the shared WebAssembly memory, where the SIMD tile reads it in place", async () => {
    const files = generateTinyModel(findTinySize("tiny") as TinySize, corpus, { seed: 6, dtype: "f32" });
    const dir = join(root, "tiny-in-place");
    await writeTinyModel(dir, files);
    const loaded = await loadModel(dir);
    const arena = wasmArena();
    if (arena === null) throw new Error("this runtime has no shared WebAssembly memory");
    const weights = matmulWeights(loaded.model);
    expect(weights.length).toBeGreaterThan(4);
    for (const w of weights) expect(arena.offsetOf(w.data)).toBeGreaterThanOrEqual(0);
  });

  // Each narrow dtype's codes as the loader re-lays them: which stored tensors hold them, the
  // order a Weight records (FP8: quads order for whole groups of four rows, else lanes order), and
  // the re-layout's plain reference (into a new array).
  const relaid = [
    {
      dtype: "mxfp4",
      seed: 7,
      isCodes: (name: string) => name.endsWith("_blocks"),
      weightDtype: "mxfp4",
      order: (w: Weight) => w.mxfp4Order,
      to: "halves",
      expected: (_: Weight) => "halves",
      reference: (codes: Uint8Array, _: Weight) => toHalves(codes),
    },
    {
      dtype: "fp8",
      seed: 8,
      isCodes: (_: string, t: HostTensor) => t.dtype === "F8_E4M3",
      weightDtype: "fp8_e4m3",
      order: (w: Weight) => w.fp8Order,
      to: "quads or lanes",
      expected: (w: Weight) => (w.rows % 4 === 0 ? "quads" : "lanes"),
      reference: (codes: Uint8Array, w: Weight) =>
        w.rows % 4 === 0 ? toQuadsInPlace(codes.slice(), w.cols) : toLanesInPlace(codes.slice()),
    },
  ] as const;
  it.each(relaid)(
    "re-lays $dtype codes in $to order as it places them, safetensors, packed or the caller's unshared, to the same logprobs",
    async (r) => {
      const files = generateTinyModel(findTinySize("tiny") as TinySize, corpus, {
        seed: r.seed,
        dtype: r.dtype,
      });
      const name = `tiny-${r.dtype}`;
      const dir = join(root, name);
      await writeTinyModel(dir, files);
      await packCheckpoint(dir, `${dir}-packed`, 1);
      // Codes the caller shares are left as they are, in the file's order: the reference.
      const sharedFiles = {
        ...files,
        tensors: new Map(
          [...files.tensors].map(([n, t]) => [n, r.isCodes(n, t) ? { ...t, data: shareArray(t.data) } : t]),
        ),
      };
      const file = await tinyFilesToModel(name, sharedFiles);
      const fileWeights = matmulWeights(file.model, r.weightDtype);
      expect(fileWeights.length).toBeGreaterThan(0);
      expect(fileWeights.every((w) => r.order(w) === undefined)).toBe(true);
      const reference = new Engine(file, { threads: 1 });
      const prompt = file.tokenizer.encode("Write down the boats.");
      const want = await run(reference, prompt);
      await reference.close();
      for (const model of [
        await loadModel(dir),
        await loadModel(`${dir}-packed`),
        await tinyFilesToModel(name, files),
      ]) {
        const weights = matmulWeights(model.model, r.weightDtype);
        expect(weights.map(r.order)).toEqual(fileWeights.map(r.expected));
        weights.forEach((w, i) => {
          const want = r.reference((fileWeights[i] as Weight).data as Uint8Array, w);
          expect(Buffer.from(w.data as Uint8Array).equals(Buffer.from(want))).toBe(true);
        });
        const engine = new Engine(model, { threads: 1 });
        expect(await run(engine, prompt)).toEqual(want);
        await engine.close();
      }
      // The caller's codes, copied into the shared memory re-laid, stay in the file's order.
      const codesName = [...files.tensors].find(([n, t]) => r.isCodes(n, t))?.[0] as string;
      expect(files.tensors.get(codesName)?.data).toEqual(sharedFiles.tensors.get(codesName)?.data);
    },
  );

  it("names the missing file", async () => {
    const dir = join(root, "missing");
    await writeTinyModel(dir, generateTinyModel(findTinySize("tiny") as TinySize, corpus));
    await unlink(join(dir, "tokenizer.json"));
    await expect(loadModel(dir)).rejects.toMatchObject({
      code: "MODEL_FILE_MISSING",
      subject: join(dir, "tokenizer.json"),
    });
  });

  it("names the tensor that disagrees with config.json", async () => {
    const dir = join(root, "inconsistent");
    await writeTinyModel(dir, generateTinyModel(findTinySize("tiny") as TinySize, corpus));
    const config = JSON.parse(await readFile(join(dir, "config.json"), "utf8"));
    config.intermediate_size = 128;
    await writeFile(join(dir, "config.json"), JSON.stringify(config));
    await expect(loadModel(dir)).rejects.toMatchObject({
      code: "MODEL_WEIGHTS_MISMATCH",
      subject: "model.layers.0.mlp.gate_proj.weight",
    });
  });
});
