import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseV4Config } from "./deepseek-v4.js";

const flash = JSON.parse(
  readFileSync(join(import.meta.dirname, "fixtures", "public-configs", "deepseek-v4-flash.json"), "utf8"),
) as Record<string, unknown>;
const { rope_scaling: _legacy, ...withoutScaling } = flash;

/** HF transformers v5's spelling of the Flash config's RoPE (configuration_deepseek_v4.py __post_init__). */
const nested = {
  main: { rope_type: "default", rope_theta: 10_000, partial_rotary_factor: 0.125 },
  compress: {
    rope_type: "yarn",
    factor: 16,
    beta_fast: 32,
    beta_slow: 1,
    original_max_position_embeddings: 65_536,
    rope_theta: 160_000,
    partial_rotary_factor: 0.125,
    attention_factor: 1,
  },
};

const ropeOf = (json: Record<string, unknown>) => {
  const layers = parseV4Config(json, "v4").layers;
  const sliding = layers.find((l) => l.attention.kind === "sliding")?.attention;
  const compressed = layers.find((l) => l.attention.kind === "hca")?.attention;
  return {
    sliding: [sliding?.ropeTheta, sliding?.yarn],
    compressed: [compressed?.ropeTheta, compressed?.yarn],
  };
};

describe("DeepSeek-V4's RoPE keys", () => {
  it("reads the released rope_scaling and transformers v5's nested rope_parameters alike", () => {
    const legacy = ropeOf(flash);
    expect(legacy.sliding).toEqual([10_000, undefined]);
    expect(legacy.compressed).toEqual([
      160_000,
      {
        factor: 16,
        originalMaxPositionEmbeddings: 65_536,
        betaFast: 32,
        betaSlow: 1,
        mscale: 1,
        mscaleAllDim: 1,
      },
    ]);
    expect(ropeOf({ ...withoutScaling, rope_parameters: nested })).toEqual(legacy);
  });

  it("takes each layer kind's θ from rope_parameters over the top-level fields, as HF does", () => {
    const rope = ropeOf({
      ...withoutScaling,
      rope_parameters: {
        main: { ...nested.main, rope_theta: 5_000 },
        compress: { ...nested.compress, rope_theta: 7_000 },
      },
    });
    expect([rope.sliding[0], rope.compressed[0]]).toEqual([5_000, 7_000]);
  });

  it.each([
    ["rope_scaling.mscale", { ...flash, rope_scaling: { ...(flash.rope_scaling as object), mscale: 1 } }],
    [
      "rope_parameters.compress.mscale_all_dim",
      {
        ...withoutScaling,
        rope_parameters: { ...nested, compress: { ...nested.compress, mscale_all_dim: 1 } },
      },
    ],
    ["rope_parameters.rope_type", { ...withoutScaling, rope_parameters: { rope_type: "yarn", factor: 16 } }],
    [
      "rope_parameters.compress.attention_factor",
      {
        ...withoutScaling,
        rope_parameters: { ...nested, compress: { ...nested.compress, attention_factor: 1.2 } },
      },
    ],
    [
      "rope_parameters.main.rope_type",
      { ...withoutScaling, rope_parameters: { ...nested, main: { ...nested.main, rope_type: "yarn" } } },
    ],
    [
      "rope_parameters.main.partial_rotary_factor",
      {
        ...withoutScaling,
        rope_parameters: { ...nested, main: { ...nested.main, partial_rotary_factor: 0.25 } },
      },
    ],
    ["rope_scaling", { ...flash, rope_parameters: nested }],
    ["rope_scaling", { ...flash, rope_scaling: { type: "linear", factor: 2 } }],
  ])("refuses %s by name", (field, json) => {
    expect(() => parseV4Config(json, "v4")).toThrow(new RegExp(`^v4: ${field.replaceAll(".", "\\.")}: `));
  });
});
