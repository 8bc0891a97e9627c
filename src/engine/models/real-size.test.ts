import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { deepseekV3Architecture, deepseekV3Parameters, parseDeepseekV3 } from "./deepseek-v3.js";
import { deepseekV4Architecture, parseV4Config, v4Parameters } from "./deepseek-v4.js";
import { v4MtpParameters } from "./deepseek-v4-mtp.js";
import { v4NameTable, v4Naming } from "./deepseek-v4-names.js";
import { glmParameters, parseGlmConfig } from "./glm-5.3-flash.js";
import { llamaParameters, parseLlamaConfig } from "./llama.js";
import { mimoArchitecture, mimoParameters, parseMimoConfig } from "./mimo.js";
import { minimaxParameters, parseMinimaxConfig } from "./minimax-m3.js";

const DIR = join(import.meta.dirname, "fixtures", "public-configs");

/** The names `pattern` stands for, its `{a-b,c,...}` lists of indices (layers, experts) expanded. */
function expand(pattern: string): string[] {
  const list = /\{([\d,-]+)\}/.exec(pattern);
  if (list === null) return [pattern];
  const [whole, items] = list as unknown as [string, string];
  const indices = items.split(",").flatMap((item) => {
    const [from, to = from] = item.split("-").map(Number) as [number, number?];
    return Array.from({ length: to - from + 1 }, (_, k) => from + k);
  });
  return indices.flatMap((i) => expand(pattern.replace(whole, String(i))));
}

/** A public tensor list fixture, expanded to each tensor's name and shape. */
function tensorList(file: string): Map<string, readonly number[]> {
  const listed = JSON.parse(readFileSync(join(DIR, file), "utf8")) as {
    readonly tensors: readonly [string, number[]][];
  };
  return new Map(listed.tensors.flatMap(([p, shape]) => expand(p).map((n) => [n, shape] as const)));
}

const sameShape = (a: readonly number[] | undefined, b: readonly number[] | undefined) =>
  JSON.stringify(a) === JSON.stringify(b);

/** `declared` names exactly the tensors `real` lists, each at its shape. */
function expectSameTensors(
  real: ReadonlyMap<string, readonly number[]>,
  declared: ReadonlyMap<string, readonly number[]>,
): void {
  expect([...real.keys()].filter((n) => !declared.has(n))).toEqual([]);
  expect([...declared.keys()].filter((n) => !real.has(n))).toEqual([]);
  const wrong = [...real].filter(([n, shape]) => !sameShape(declared.get(n), shape));
  expect(
    wrong.map(([n, shape]) => `${n} ${JSON.stringify(shape)} vs ${JSON.stringify(declared.get(n))}`),
  ).toEqual([]);
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
  const real = tensorList("glm-5.1.tensors.json");
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

describe("Kimi Linear 48B-A3B at its real size, shapes only, against GLM-5.3-Flash's code", () => {
  const json = JSON.parse(readFileSync(join(DIR, "kimi-linear-48b-a3b.json"), "utf8"));
  // Read as released, shared experts included: the declarations show what else separates a real
  // Kimi Linear checkpoint from the family (its mHC tensors).
  const config = parseGlmConfig({ ...json, model_type: "glm5_3_flash" }, "kimi-linear");
  const real = tensorList("kimi-linear-48b-a3b.tensors.json");
  const declared = new Map(glmParameters(config).map((d) => [d.name, d.shape]));

  it("expands the public tensor list to the 20,493 tensors it reports", () => {
    expect(real.size).toBe(20_493);
  });

  it("declares the real checkpoint's tensors at their shapes, shared experts included; only mHC is the family's own", () => {
    expect([...real.keys()].filter((n) => !declared.has(n))).toEqual([]);
    const extra = [...declared.keys()].filter((n) => !real.has(n));
    expect(extra.filter((n) => !/(\.attn_hc\.|\.ffn_hc\.|^model\.hc_head\.)/.test(n))).toEqual([]);
    const wrong = [...real].filter(([n, shape]) => declared.has(n) && !sameShape(declared.get(n), shape));
    expect(
      wrong
        .map(([n, shape]) => `${n} ${JSON.stringify(shape)} vs ${JSON.stringify(declared.get(n))}`)
        .slice(0, 8),
    ).toEqual([]);
  });
});

describe("gpt-oss-20b at its real size, shapes only, against MiniMax-M3's code", () => {
  const json = JSON.parse(readFileSync(join(DIR, "gpt-oss-20b.json"), "utf8"));
  // Read as released (model_type gpt_oss, YaRN included).
  const config = parseMinimaxConfig(json, "gpt-oss");
  const real = tensorList("gpt-oss-20b.tensors.json");
  // MXFP4 stacks are stored as <name>_blocks [count, rows, cols/32, 16] and <name>_scales.
  const declared = new Map(
    minimaxParameters(config).flatMap(({ decl, mxfp4 }): [string, readonly number[]][] => {
      if (!mxfp4) return [[decl.name, decl.shape]];
      const [count, rows, cols] = decl.shape as [number, number, number];
      return [
        [`${decl.name}_blocks`, [count, rows, cols / 32, 16]],
        [`${decl.name}_scales`, [count, rows, cols / 32]],
      ];
    }),
  );

  it("declares every tensor of the real checkpoint at its shape, o_proj's bias and every layer's sinks included", () => {
    expect([...real.keys()].filter((n) => !declared.has(n))).toEqual([]);
    expect([...declared.keys()].filter((n) => !real.has(n))).toEqual([]);
    const wrong = [...real].filter(([n, shape]) => declared.has(n) && !sameShape(declared.get(n), shape));
    expect(wrong).toEqual([]);
  });
});

describe("Kimi-K2-Instruct at its real size, shapes only", () => {
  const json = JSON.parse(readFileSync(join(DIR, "kimi-k2-instruct.json"), "utf8"));
  // Read as released (YaRN included): every tensor of the FP8 checkpoint must be a declared one or
  // its 128x128 block-scale grid.
  const config = parseDeepseekV3(json, "kimi-k2");
  const real = tensorList("kimi-k2-instruct.tensors.json");
  const declared = new Map(deepseekV3Parameters(config).map(({ decl }) => [decl.name, decl.shape]));

  it("expands the public tensor list to the 139,644 tensors it reports", () => {
    expect(real.size).toBe(139_644);
  });

  it("declares every weight at its shape and reads each FP8 scale grid over its matrix", () => {
    const unmatched = [...real].filter(([name, shape]) => {
      // RoPE buffers some checkpoints carry: never weights (loader/build-model.ts skips them).
      if (name.endsWith(".rotary_emb.inv_freq")) return false;
      if (name.endsWith(".weight_scale_inv")) {
        const matrix = declared.get(name.replace(/_scale_inv$/, ""));
        return !sameShape(
          shape,
          matrix?.map((d) => Math.ceil(d / 128)),
        );
      }
      return !sameShape(declared.get(name), shape);
    });
    expect(unmatched.slice(0, 5)).toEqual([]);
    const weights = [...real.keys()].filter((n) => !/(_scale_inv|\.inv_freq)$/.test(n));
    expect(weights).toHaveLength(declared.size);
  });
});

describe("DeepSeek-V4-Flash at its real size, shapes only, in transformers' names", () => {
  // The fixture is HF DeepseekV4ForCausalLM's state dict at this config (names and shapes from
  // modeling_deepseek_v4.py, MTP dropped as HF drops it). The released deepseek-ai checkpoint
  // keeps DeepSeek's own names, checked in the next block.
  const config = parseV4Config(
    JSON.parse(readFileSync(join(DIR, "deepseek-v4-flash.json"), "utf8")),
    "v4-flash",
  );
  const real = tensorList("deepseek-v4-flash.tensors.json");
  const declared = new Map(v4Parameters(config).map(({ decl }) => [decl.name, decl.shape]));

  it("reads 2 sliding, 21 compressed sparse and 20 heavily compressed layers, the first 3 hash-routed", () => {
    const kinds = config.layers.map((l) => l.attention.kind);
    expect(kinds.filter((k) => k === "sliding")).toHaveLength(2);
    expect(kinds.filter((k) => k === "csa")).toHaveLength(21);
    expect(kinds.filter((k) => k === "hca")).toHaveLength(20);
    expect(config.layers.map((l) => l.moe.routing).lastIndexOf("hash")).toBe(2);
    expect(real.size).toBe(1285);
  });

  it("declares every tensor of the checkpoint at its shape, and nothing else", () => {
    expectSameTensors(real, declared);
  });

  it("skips the MTP layer's tensors, which HF drops and the draft head reads", () => {
    expect(deepseekV4Architecture.ignoresTensor?.("mtp.0.attn.wq_a.weight", config)).toBe(true);
    expect([...real.keys()].some((n) => deepseekV4Architecture.ignoresTensor?.(n, config))).toBe(false);
  });
});

describe("DeepSeek-V4-Flash at its real size, shapes only, in DeepSeek's released names", () => {
  // The fixture is the release's index in DeepSeek's names (see its _source), MTP included; the
  // family reads it through models/deepseek-v4-names.ts's table, whose names are checked here.
  const config = parseV4Config(
    JSON.parse(readFileSync(join(DIR, "deepseek-v4-flash.json"), "utf8")),
    "v4-flash",
  );
  const real = tensorList("deepseek-v4-flash-native.tensors.json");
  const mtp = v4MtpParameters(config, config.vocabSize);
  const declared = new Map(
    [...v4Parameters(config).map(({ decl }) => decl), ...mtp.layer, ...mtp.experts].map((d) => [
      d.name,
      d.shape,
    ]),
  );
  const table = v4NameTable(config);

  it("lists the release's 69,187 tensors, every one a DeepSeek-V4 name of this config", () => {
    expect(real.size).toBe(69_187);
    expect(v4Naming([...real.keys()], config, "v4-flash")).toBe("deepseek");
  });

  it("holds every declared tensor under DeepSeek's name at its shape (experts per expert, FP8 scales per 128x128 block), and nothing else", () => {
    const expected = new Map<string, readonly number[]>();
    for (const { family, stored, linear } of table.pairs) {
      const shape = declared.get(family);
      if (shape === undefined) continue;
      expected.set(stored, shape);
      const scale = stored.replace(/\.weight$/, ".scale");
      if (linear && real.has(scale))
        expected.set(
          scale,
          shape.map((d) => Math.ceil(d / 128)),
        );
    }
    for (const s of table.stacks) {
      expect(declared.get(s.family)).toEqual([s.experts, s.parts.reduce((a, p) => a + p.rows, 0), s.cols]);
      for (let e = 0; e < s.experts; e++)
        for (const part of s.parts) {
          expected.set(`${s.stored}.${e}.${part.name}.weight`, [part.rows, s.cols / 2]);
          expected.set(`${s.stored}.${e}.${part.name}.scale`, [part.rows, s.cols / 32]);
        }
    }
    expectSameTensors(real, expected);
    expect([...real.keys()].filter((n) => n.endsWith(".scale") && !n.includes(".experts."))).toHaveLength(
      43 * 8 + 21 + 10,
    );
  });
});

describe("MiMo-V2-Flash at its real size, shapes only", () => {
  // The config and the per-layer-kind names are third-party transcriptions (see index.json and the
  // tensor list's _source): no verbatim config.json or index of the checkpoint was found.
  const config = parseMimoConfig(JSON.parse(readFileSync(join(DIR, "mimo-v2-flash.json"), "utf8")), "mimo");
  const real = tensorList("mimo-v2-flash.tensors.json");
  const { outer, layers, experts } = mimoParameters(config);
  const declared = new Map([...outer, ...layers, ...experts].map((d) => [d.name, d.shape]));

  it("reads 9 full-attention layers, sinks on the 39 sliding ones, one dense MLP", () => {
    expect(config.layers.filter((l) => l.attention.kind === "full")).toHaveLength(9);
    expect(config.layers.filter((l) => l.attention.sinks)).toHaveLength(39);
    expect(config.layers.filter((l) => l.mlp !== "moe")).toHaveLength(1);
    expect(real.size).toBe(36_523);
  });

  it("declares every tensor of the checkpoint at its shape, and nothing else", () => {
    expectSameTensors(real, declared);
    expect(mimoArchitecture.ignoresTensor?.("model.mtp.layers.0.eh_proj.weight", config)).toBe(true);
  });
});

describe("Qwen3-4B at its real size, shapes only, on the llama family", () => {
  const config = parseLlamaConfig(JSON.parse(readFileSync(join(DIR, "qwen3-4b.json"), "utf8")), "qwen3-4b");
  const real = tensorList("qwen3-4b.tensors.json");
  const { outer, layers } = llamaParameters(config);
  const declared = new Map([...outer, ...layers].map((d) => [d.name, d.shape]));

  it("declares every tensor of the checkpoint at its shape, the tied head absent, and nothing else", () => {
    expect(real.size).toBe(398);
    expect([...real.keys()].filter((n) => !declared.has(n))).toEqual([]);
    expect([...declared.keys()].filter((n) => !real.has(n))).toEqual([]);
    expect([...real].filter(([n, shape]) => !sameShape(declared.get(n), shape))).toEqual([]);
  });
});
