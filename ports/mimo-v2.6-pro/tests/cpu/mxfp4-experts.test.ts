import { describe, expect, it } from "vitest";
import { goldenLogprobs } from "../../../../src/engine/tests/golden-logprobs.js";
import { dequantizeMxfp4 } from "../../../../src/formats/index.js";
import { portReference } from "../../../../test/helpers/port-reference.js";

const ref = await portReference("mimo-v2.6-pro");

const _config = ref.referenceConfig;
const files = ref.referenceFiles();

describe("MiMo-V2.6-Pro's tiny reference model", () => {
  it("stores every routed expert in MXFP4 and nothing else", () => {
    const names = [...files.tensors.keys()];
    const blocks = names.filter((n) => n.endsWith("_blocks"));
    // 7 MoE layers x 8 experts x 3 projections.
    expect(blocks).toHaveLength(7 * 8 * 3);
    expect(
      blocks.every((n) =>
        /^model\.layers\.\d+\.mlp\.experts\.\d+\.(gate|up|down)_proj\.weight_blocks$/.test(n),
      ),
    ).toBe(true);
    expect(files.tensors.get("model.layers.1.mlp.experts.0.gate_proj.weight_blocks")?.shape).toEqual([
      32, 2, 16,
    ]);
    expect(files.tensors.has("model.layers.1.mlp.experts.0.gate_proj.weight")).toBe(false);
  });

  it("computes what the same model with its experts dequantized to f32 computes, bit for bit", async () => {
    const dequantized = new Map(files.tensors);
    for (const [name, t] of files.tensors) {
      if (!name.endsWith("_blocks")) continue;
      const base = name.slice(0, -"_blocks".length);
      const scales = files.tensors.get(`${base}_scales`)?.data as Uint8Array;
      const shape = [t.shape[0] as number, (t.shape[1] as number) * 32];
      dequantized.delete(name);
      dequantized.delete(`${base}_scales`);
      dequantized.set(base, { dtype: "F32", shape, data: dequantizeMxfp4(t.data as Uint8Array, scales) });
    }
    const mxfp4 = ref.build("pro", files);
    const f32 = ref.build("pro-f32", { ...files, tensors: dequantized });
    expect(await goldenLogprobs(mxfp4)).toEqual(await goldenLogprobs(f32));
  });
});
