import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BringupError } from "../../common/errors.js";
import { type YarnScaling, yarnSoftmaxScale } from "../kernels/rope.js";
import {
  COMMON_UNREAD_FIELDS,
  QUANTIZATION_UNREAD_KEYS,
  type UnreadFields,
  unclassifiedFields,
} from "./config-fields.js";
import { DEEPSEEK_V3_READ_FIELDS, DEEPSEEK_V3_UNREAD_FIELDS, parseDeepseekV3 } from "./deepseek-v3.js";
import { parseV4Config, V4_READ_FIELDS, V4_UNREAD_FIELDS } from "./deepseek-v4.js";
import { GLM_FLASH_READ_FIELDS, GLM_FLASH_UNREAD_FIELDS, parseGlmConfig } from "./glm-5.3-flash.js";
import { LLAMA_READ_FIELDS, LLAMA_UNREAD_FIELDS, parseLlamaConfig } from "./llama.js";
import { MIMO_READ_FIELDS, MIMO_UNREAD_FIELDS, parseMimoConfig } from "./mimo.js";
import { MINIMAX_READ_FIELDS, MINIMAX_UNREAD_FIELDS, parseMinimaxConfig } from "./minimax-m3.js";

const DIR = join(import.meta.dirname, "fixtures", "public-configs");

/** Each family a fixture names: its parser and how it classifies config.json fields. */
const FAMILIES: Readonly<
  Record<
    string,
    {
      readonly parse: (json: unknown, source: string) => unknown;
      readonly read: readonly string[];
      readonly unread: UnreadFields;
      /** The quantization_config keys its model code reads (others: QUANTIZATION_UNREAD_KEYS). */
      readonly quantizationRead?: readonly string[];
    }
  >
> = {
  "deepseek-v3": {
    parse: parseDeepseekV3,
    read: DEEPSEEK_V3_READ_FIELDS,
    unread: DEEPSEEK_V3_UNREAD_FIELDS,
    quantizationRead: ["scale_fmt"],
  },
  "deepseek-v4": { parse: parseV4Config, read: V4_READ_FIELDS, unread: V4_UNREAD_FIELDS },
  "glm-5.3-flash": { parse: parseGlmConfig, read: GLM_FLASH_READ_FIELDS, unread: GLM_FLASH_UNREAD_FIELDS },
  llama: { parse: parseLlamaConfig, read: LLAMA_READ_FIELDS, unread: LLAMA_UNREAD_FIELDS },
  mimo: { parse: parseMimoConfig, read: MIMO_READ_FIELDS, unread: MIMO_UNREAD_FIELDS },
  "minimax-m3": { parse: parseMinimaxConfig, read: MINIMAX_READ_FIELDS, unread: MINIMAX_UNREAD_FIELDS },
};

interface FixtureEntry {
  readonly file: string;
  readonly family: string;
  /** The model_type the family reads the lineage's fields under, where it is not the fixture's. */
  readonly asModelType?: string;
  readonly expect: "parses" | { readonly refused: string };
}

const index = JSON.parse(readFileSync(join(DIR, "index.json"), "utf8")) as {
  readonly _source: Readonly<Record<string, string>>;
  readonly fixtures: readonly FixtureEntry[];
};

function load(entry: FixtureEntry): Record<string, unknown> {
  const json = JSON.parse(readFileSync(join(DIR, entry.file), "utf8")) as Record<string, unknown>;
  return entry.asModelType === undefined ? json : { ...json, model_type: entry.asModelType };
}

function familyOf(entry: FixtureEntry) {
  const family = FAMILIES[entry.family];
  if (family === undefined) throw new Error(`${entry.file}: no family ${entry.family} in this test`);
  return family;
}

describe("public config.json fixtures", () => {
  it("lists every fixture file once, each with its source", () => {
    const files = readdirSync(DIR)
      .filter((f) => f.endsWith(".json") && f !== "index.json" && !f.endsWith(".tensors.json"))
      .sort();
    expect(index.fixtures.map((f) => f.file).sort()).toEqual(files);
    expect(Object.keys(index._source).sort()).toEqual(files);
  });

  for (const entry of index.fixtures) {
    it(`${entry.file}: every field is read by ${entry.family} or known not to matter`, () => {
      const family = familyOf(entry);
      expect(unclassifiedFields(load(entry), family.read, family.unread)).toEqual([]);
    });

    it(`${entry.file}: every quantization_config key is read by ${entry.family} or known not to matter`, () => {
      const family = familyOf(entry);
      const keys = Object.keys((load(entry).quantization_config as object | null | undefined) ?? {});
      expect(
        keys.filter((k) => !(family.quantizationRead ?? []).includes(k) && !(k in QUANTIZATION_UNREAD_KEYS)),
      ).toEqual([]);
    });

    const expected = entry.expect;
    if (expected === "parses") {
      it(`${entry.file}: ${entry.family} parses it`, () => {
        expect(() => familyOf(entry).parse(load(entry), entry.file)).not.toThrow();
      });
    } else {
      it(`${entry.file}: ${entry.family} refuses it in one line naming ${expected.refused}`, () => {
        let error: unknown;
        try {
          familyOf(entry).parse(load(entry), entry.file);
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(BringupError);
        expect((error as BringupError).code).toBe("MODEL_CONFIG_INVALID");
        expect((error as Error).message).toContain(`${entry.file}: ${expected.refused}: `);
        expect((error as Error).message).not.toContain("\n");
      });
    }
  }

  it("finds a field nobody classified", () => {
    const entry = index.fixtures[0] as FixtureEntry;
    const family = familyOf(entry);
    expect(unclassifiedFields({ ...load(entry), rope_novelty: 1 }, family.read, family.unread)).toEqual([
      "rope_novelty",
    ]);
  });

  it("classifies each field once: read, or unread with a reason", () => {
    for (const [name, family] of Object.entries(FAMILIES)) {
      const unread = { ...COMMON_UNREAD_FIELDS, ...family.unread };
      expect(
        family.read.filter((f) => f in unread),
        name,
      ).toEqual([]);
      expect(
        Object.entries(unread).filter(([, reason]) => reason.length < 20),
        name,
      ).toEqual([]);
    }
  });

  it("reads GLM-5.1's RoPE base from rope_parameters and its interleaved indexer RoPE", () => {
    const config = parseDeepseekV3(load({ file: "glm-5.1.json", family: "deepseek-v3", expect: "parses" }));
    expect(config.mla.ropeTheta).toBe(1_000_000);
    expect(config.dsa?.ropeInterleave).toBe(true);
    expect(config.layers.filter((k) => k === "moe")).toHaveLength(75);
    expect(config.sharedIntermediateSize).toBe(2048);
  });

  it("reads DeepSeek-V3's YaRN: factor 40 over 4,096 positions, the softmax scaled by mscale(40, 1)^2", () => {
    const config = parseDeepseekV3(
      load({ file: "deepseek-v3.json", family: "deepseek-v3", expect: "parses" }),
    );
    const yarn = config.mla.ropeScaling as YarnScaling;
    expect(yarn).toEqual({
      factor: 40,
      originalMaxPositionEmbeddings: 4096,
      betaFast: 32,
      betaSlow: 1,
      mscale: 1,
      mscaleAllDim: 1,
    });
    expect(yarnSoftmaxScale(yarn)).toBeCloseTo((0.1 * Math.log(40) + 1) ** 2, 12);
    expect(config.layers.filter((k) => k === "moe")).toHaveLength(58);
    expect(config.moe).toMatchObject({ numGroups: 8, topKGroups: 4, routedScalingFactor: 2.5 });
  });

  it("has YaRN factors equal to max_position_embeddings / original_max_position_embeddings, so HF's versions agree", () => {
    // transformers 4.4x-4.5x took that ratio as the factor; v5 and vLLM take rope_scaling.factor.
    const yarns = index.fixtures.flatMap((entry) => {
      const json = load(entry);
      const s = json.rope_scaling as { factor?: number; original_max_position_embeddings?: number } | null;
      return s?.factor === undefined ? [] : [[entry.file, s, json.max_position_embeddings] as const];
    });
    expect(yarns.map(([file]) => file).sort()).toEqual([
      "deepseek-v3.json",
      "deepseek-v4-flash.json",
      "gpt-oss-120b.json",
      "gpt-oss-20b.json",
      "kimi-k2-instruct.json",
    ]);
    for (const [file, s, max] of yarns)
      expect([file, (max as number) / (s.original_max_position_embeddings as number)]).toEqual([
        file,
        s.factor,
      ]);
  });

  it("refuses GLM-5.1's mlp_layer_types where they disagree with first_k_dense_replace", () => {
    const json = load({ file: "glm-5.1.json", family: "deepseek-v3", expect: "parses" });
    expect(() => parseDeepseekV3({ ...json, first_k_dense_replace: 2 }, "glm")).toThrow(
      /glm: mlp_layer_types: disagrees .* \(layer 2 differs/,
    );
    expect(() => parseDeepseekV3({ ...json, qk_head_dim: 192 }, "glm")).toThrow(
      /glm: qk_head_dim: 192 is not/,
    );
  });
});

describe("MiMo-V2.6-Flash's flat rope_parameters", () => {
  const json = {
    ...JSON.parse(readFileSync(join(DIR, "mimo-v2.6-flash.json"), "utf8")),
    model_type: "mimo_v2_flash",
    attention_projection_layout: undefined,
  };

  it("restate the global layers' RoPE, or are refused naming the field", () => {
    expect(() => parseMimoConfig(json, "mimo")).not.toThrow();
    const rope = { ...json.rope_parameters, rope_theta: 5_000_000 };
    expect(() => parseMimoConfig({ ...json, rope_parameters: rope }, "mimo")).toThrow(
      /mimo: rope_parameters\.rope_theta: 5000000 differs from the global layers' RoPE base 10000000/,
    );
    // A key or a scaling kind nobody reads is refused by name, flat or per layer type.
    const extra = { ...json.rope_parameters, factor: 4 };
    expect(() => parseMimoConfig({ ...json, rope_parameters: extra }, "mimo")).toThrow(
      /mimo: rope_parameters: Unrecognized key: "factor"/,
    );
    const perType = { full_attention: { rope_type: "yarn", rope_theta: 1e7 } };
    expect(() => parseMimoConfig({ ...json, rope_parameters: perType }, "mimo")).toThrow(
      /mimo: rope_parameters\.full_attention\.rope_type: /,
    );
  });
});

describe("MiniMax-M2.7's rotary_dim", () => {
  const json = JSON.parse(readFileSync(join(DIR, "minimax-m2.7.json"), "utf8"));
  const readable = {
    ...json,
    model_type: "minimax_m3",
    use_qk_norm: false,
    scoring_func: undefined,
    use_routing_bias: false,
    layer_types: Array(62).fill("full_attention"),
    sliding_window: 128,
  };

  it("sets the rotated features per head, and must agree with partial_rotary_factor", () => {
    expect(parseMinimaxConfig(readable, "m2").layers[0]?.partialRotaryFactor).toBe(0.5);
    expect(() => parseMinimaxConfig({ ...readable, partial_rotary_factor: 1 }, "m2")).toThrow(
      /m2: rotary_dim: 64 disagrees with partial_rotary_factor 1 of head_dim 128/,
    );
  });
});
