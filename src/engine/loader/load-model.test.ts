import { mkdtemp, readFile, rm, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { toLanesInPlace } from "../../formats/fp8-lanes.js";
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

  it("re-lays MXFP4 codes out in halves order as it places them, safetensors or packed, to the same logprobs", async () => {
    const files = generateTinyModel(findTinySize("tiny") as TinySize, corpus, {
      seed: 7,
      dtype: "mxfp4",
    });
    const dir = join(root, "tiny-mxfp4");
    await writeTinyModel(dir, files);
    await packCheckpoint(dir, `${dir}-packed`, 1);
    // Codes the caller shares are left as they are, in OCP order: the reference.
    const ocpFiles = {
      ...files,
      tensors: new Map(
        [...files.tensors].map(([name, t]) => [
          name,
          name.endsWith("_blocks") ? { ...t, data: shareArray(t.data) } : t,
        ]),
      ),
    };
    const ocp = await tinyFilesToModel("tiny-mxfp4", ocpFiles);
    const ocpWeights = matmulWeights(ocp.model, "mxfp4");
    expect(ocpWeights.length).toBeGreaterThan(0);
    expect(ocpWeights.every((w) => w.mxfp4Order === undefined)).toBe(true);
    const reference = new Engine(ocp, { threads: 1 });
    const prompt = ocp.tokenizer.encode("Write down the boats.");
    const want = await run(reference, prompt);
    await reference.close();
    for (const model of [
      await loadModel(dir),
      await loadModel(`${dir}-packed`),
      await tinyFilesToModel("tiny-mxfp4", files),
    ]) {
      const weights = matmulWeights(model.model, "mxfp4");
      expect(weights.map((w) => w.mxfp4Order)).toEqual(weights.map(() => "halves"));
      weights.forEach((w, i) => {
        const before = ocpWeights[i] as Weight;
        expect(
          Buffer.from(w.data as Uint8Array).equals(Buffer.from(toHalves(before.data as Uint8Array))),
        ).toBe(true);
      });
      const engine = new Engine(model, { threads: 1 });
      expect(await run(engine, prompt)).toEqual(want);
      await engine.close();
    }
    // The caller's codes stay in OCP order.
    const codesName = [...files.tensors.keys()].find((n) => n.endsWith("_blocks")) as string;
    expect(files.tensors.get(codesName)?.data).toEqual(ocpFiles.tensors.get(codesName)?.data);
  });

  it("re-lays FP8 codes in lanes order as it places them, safetensors or packed, to the same logprobs", async () => {
    const files = generateTinyModel(findTinySize("tiny") as TinySize, corpus, { seed: 8, dtype: "fp8" });
    const dir = join(root, "tiny-fp8");
    await writeTinyModel(dir, files);
    await packCheckpoint(dir, `${dir}-packed`, 1);
    // The caller's codes are left as they are, in file order: the reference.
    const file = await tinyFilesToModel("tiny-fp8", files);
    const fileWeights = matmulWeights(file.model, "fp8_e4m3");
    expect(fileWeights.length).toBeGreaterThan(0);
    expect(fileWeights.every((w) => w.fp8Order === undefined)).toBe(true);
    const reference = new Engine(file, { threads: 1 });
    const prompt = file.tokenizer.encode("Write down the boats.");
    const want = await run(reference, prompt);
    await reference.close();
    for (const model of [await loadModel(dir), await loadModel(`${dir}-packed`)]) {
      const weights = matmulWeights(model.model, "fp8_e4m3");
      expect(weights.map((w) => w.fp8Order)).toEqual(fileWeights.map(() => "lanes"));
      weights.forEach((w, i) => {
        const lanes = toLanesInPlace((fileWeights[i] as Weight).data.slice() as Uint8Array);
        expect(Buffer.from(w.data as Uint8Array).equals(Buffer.from(lanes))).toBe(true);
      });
      const engine = new Engine(model, { threads: 1 });
      expect(await run(engine, prompt)).toEqual(want);
      await engine.close();
    }
  });

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
