import { describe, expect, it } from "vitest";
import { z } from "zod";
import { parseConfigFields, ROPE_FIELDS, ropeConfig } from "./config-fields.js";

/**
 * ropeConfig over `json` as a family that applies YaRN (`yarn`) or not reads it, and that rotates
 * part of each head (its top-level `partialRotaryFactor`) or whole heads (undefined).
 */
function rope(json: Record<string, unknown>, yarn: boolean, partialRotaryFactor?: number) {
  const { fields, fail } = parseConfigFields(z.looseObject(ROPE_FIELDS), json, "config.json", "test");
  return ropeConfig(fields, fail, {
    defaultTheta: 10_000,
    ...(yarn ? { yarn: { maxPositions: 4096 } } : {}),
    ...(partialRotaryFactor === undefined ? {} : { partialRotaryFactor }),
  });
}

describe("ropeConfig: the RoPE base and scaling in every public spelling", () => {
  it("reads rope_theta at the top, rope_parameters.rope_theta (transformers v5, GLM-5.x), else the default", () => {
    expect(rope({ rope_theta: 50_000 }, false)).toEqual({ theta: 50_000, partialRotaryFactor: 1 });
    expect(rope({ rope_parameters: { rope_type: "default", rope_theta: 8e6 } }, false)).toEqual({
      theta: 8e6,
      partialRotaryFactor: 1,
    });
    expect(rope({}, false)).toEqual({ theta: 10_000, partialRotaryFactor: 1 });
  });

  it("lets rope_parameters win over an inherited top-level rope_theta, as transformers v5 does", () => {
    expect(rope({ rope_theta: 10_000, rope_parameters: { rope_theta: 8e6 } }, false).theta).toBe(8e6);
  });

  it("reads YaRN from rope_scaling (DeepSeek-V3, Kimi K2, gpt-oss) or rope_parameters where the family applies it", () => {
    const yarn = {
      rope_type: "yarn",
      factor: 32,
      original_max_position_embeddings: 4096,
      beta_fast: 32,
      beta_slow: 1,
    };
    const expected = { factor: 32, originalMaxPositionEmbeddings: 4096, betaFast: 32, betaSlow: 1 };
    expect(rope({ rope_theta: 150_000, rope_scaling: yarn }, true)).toEqual({
      theta: 150_000,
      partialRotaryFactor: 1,
      yarn: expected,
    });
    expect(
      rope({ rope_parameters: { ...yarn, rope_theta: 50_000, mscale: 1, mscale_all_dim: 1 } }, true),
    ).toEqual({
      theta: 50_000,
      partialRotaryFactor: 1,
      yarn: { ...expected, mscale: 1, mscaleAllDim: 1 },
    });
    // HF's older key `type` names the kind too; the original context falls back to the family's.
    expect(
      rope({ rope_scaling: { type: "yarn", factor: 4 } }, true).yarn?.originalMaxPositionEmbeddings,
    ).toBe(4096);
  });

  it("reads partial_rotary_factor from rope_parameters (transformers v5) where the family rotates part of each head", () => {
    const partial = (json: Record<string, unknown>, topLevel?: number) =>
      rope(json, false, topLevel).partialRotaryFactor;
    const nested = { rope_parameters: { rope_type: "default", rope_theta: 1e6, partial_rotary_factor: 0.5 } };
    expect(partial(nested, 1)).toBe(0.5);
    expect(partial({}, 0.25)).toBe(0.25);
    expect(partial({})).toBe(1);
    expect(() => partial(nested)).toThrow(
      /^config\.json: rope_parameters\.partial_rotary_factor: 0\.5: this family rotates whole heads/,
    );
    expect(() => partial(nested, 0.25)).toThrow(/0\.5 differs from partial_rotary_factor 0\.25/);
  });

  it("refuses by name a key of a RoPE object the engine does not read, and reads HF's attention_factor", () => {
    expect(() => rope({ rope_parameters: { rope_type: "default", low_freq_factor: 1 } }, true)).toThrow(
      /^config\.json: rope_parameters\.low_freq_factor: is not a RoPE parameter the engine reads/,
    );
    const yarn = { rope_type: "yarn", factor: 32 };
    expect(() => rope({ rope_scaling: { ...yarn, low_freq_factor: 1 } }, true)).toThrow(
      /rope_scaling\.low_freq_factor: is not a RoPE parameter/,
    );
    // A scaling kind the family does not apply is named first.
    expect(() =>
      rope({ rope_scaling: { rope_type: "llama3", factor: 8, low_freq_factor: 1 } }, true),
    ).toThrow(/rope_scaling: RoPE scaling "llama3"/);
    expect(rope({ rope_scaling: { ...yarn, attention_factor: 1.2 } }, true).yarn?.attentionFactor).toBe(1.2);
  });

  it("refuses by name a scaling the family does not apply, never dropping it", () => {
    const yarn = { rope_type: "yarn", factor: 32 };
    expect(() => rope({ rope_scaling: yarn }, false)).toThrow(
      /rope_scaling: RoPE scaling "yarn" is not applied/,
    );
    expect(() => rope({ rope_parameters: { ...yarn, rope_theta: 1e6 } }, false)).toThrow(
      /^config\.json: rope_parameters: /,
    );
    expect(() => rope({ rope_scaling: { rope_type: "linear", factor: 2 } }, true)).toThrow(/"linear"/);
    expect(() => rope({ rope_scaling: { rope_type: "yarn" } }, true)).toThrow(/rope_scaling\.factor/);
    expect(() => rope({ rope_scaling: yarn, rope_parameters: yarn }, true)).toThrow(/keep one of them/);
    // gpt-oss's unrounded correction range is carried to the RoPE tables.
    expect(rope({ rope_scaling: { ...yarn, truncate: false } }, true).yarn?.truncate).toBe(false);
    expect(rope({ rope_scaling: null, rope_parameters: { rope_type: "default" } }, false)).toEqual({
      theta: 10_000,
      partialRotaryFactor: 1,
    });
  });
});
