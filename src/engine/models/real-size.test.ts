import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { deepseekV3Architecture, deepseekV3Parameters, parseDeepseekV3 } from "./deepseek-v3.js";

const DIR = join(import.meta.dirname, "fixtures", "public-configs");

/** The names `pattern` stands for, its `{a-b}` ranges (layers, experts) expanded. */
function expand(pattern: string): string[] {
  const range = /\{(\d+)-(\d+)\}/.exec(pattern);
  if (range === null) return [pattern];
  const [whole, from, to] = range as unknown as [string, string, string];
  return Array.from({ length: Number(to) - Number(from) + 1 }, (_, k) =>
    expand(pattern.replace(whole, String(Number(from) + k))),
  ).flat();
}

/**
 * Tensors of the w8a8 copy's quantizer, beside each int8 weight (offsets, scales, the activation
 * quantizer's scale, offset and bias) and its Hadamard rotation `rot.weight`: not the lineage's
 * tensors, and not read by the engine (which reads bf16, FP8 or MXFP4 weights).
 */
const W8A8_QUANTIZER =
  /(\.weight_offset|\.weight_scale|\.deq_scale|\.input_offset|\.input_scale|\.quant_bias)$|^rot\.weight$/;

describe("GLM-5.1 at its real size, shapes only", () => {
  const config = parseDeepseekV3(JSON.parse(readFileSync(join(DIR, "glm-5.1.json"), "utf8")), "glm-5.1.json");
  const listed = JSON.parse(readFileSync(join(DIR, "glm-5.1.tensors.json"), "utf8")) as {
    readonly tensors: readonly [string, number[]][];
  };
  const real = new Map(listed.tensors.flatMap(([p, shape]) => expand(p).map((n) => [n, shape] as const)));
  const declared = new Map(deepseekV3Parameters(config).map(({ decl }) => [decl.name, decl.shape]));

  it("expands the public tensor list to the 178,663 tensors it reports", () => {
    expect(real.size).toBe(178_663);
  });

  it("declares every tensor of the real checkpoint the model reads, at its real shape", () => {
    const read = [...real].filter(
      ([name]) => !W8A8_QUANTIZER.test(name) && !deepseekV3Architecture.ignoresTensor?.(name, config),
    );
    const wrong = read.filter(
      ([name, shape]) => JSON.stringify(declared.get(name)) !== JSON.stringify(shape),
    );
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(read).toHaveLength(declared.size);
  });

  it("skips exactly the multi-token-prediction layer after the 78 decoder layers", () => {
    const skipped = [...real.keys()].filter((n) => deepseekV3Architecture.ignoresTensor?.(n, config));
    expect(skipped.every((n) => n.startsWith("model.layers.78."))).toBe(true);
    expect(skipped).toContain("model.layers.78.eh_proj.weight");
    expect(deepseekV3Architecture.ignoresTensor?.("model.layers.77.self_attn.o_proj.weight", config)).toBe(
      false,
    );
  });
});
