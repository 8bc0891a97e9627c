import { describe, expect, it } from "vitest";
import { abArmBuild, abArmNames, buildKey, describeBuild } from "./builds.js";
import { Reference } from "./manifest.js";

const reference = { kv_layout: "window-sized" as const, switches: { dsa_indexer: "fp8" } };

/** A reference section with one A/B of arms `a` and `b`, parsed by the manifest schema. */
function withAb(a: unknown, b: unknown) {
  return Reference.safeParse({
    config: { model_type: "x" },
    max_model_len: 256,
    switches: reference.switches,
    gates: [
      { kind: "bit-identical-decode", compare: "batch-invariance", sampling: ["greedy"], record: "p/decode" },
    ],
    benchmarks: [
      {
        kind: "ab",
        metric: "decode_tok_s",
        a,
        b,
        prompt_tokens: 16,
        output_tokens: 8,
        blocks: 2,
        record: "p/ab",
      },
    ],
  });
}

describe("A/B arms as builds", () => {
  it("take the reference section's layout and switches where they set none, their own switches over them", () => {
    expect(abArmBuild({}, reference)).toEqual({
      kv_layout: "window-sized",
      switches: { dsa_indexer: "fp8" },
    });
    expect(abArmBuild({ kv_layout: "full", switches: { dsa_attention: "dense" } }, reference)).toEqual({
      kv_layout: "full",
      switches: { dsa_indexer: "fp8", dsa_attention: "dense" },
    });
    expect(abArmBuild({ switches: { dsa_indexer: "exact" } }, reference).switches).toEqual({
      dsa_indexer: "exact",
    });
    expect(abArmBuild({ kv_layout: "full" }, { kv_layout: "window-sized" })).toEqual({ kv_layout: "full" });
  });

  it("are named for what differs, so layout-only arms keep their names, unless the manifest names them", () => {
    expect(abArmNames({ a: { kv_layout: "full" }, b: { kv_layout: "window-sized" } }, reference)).toEqual({
      a: "full KV layout",
      b: "window-sized KV layout",
    });
    expect(
      abArmNames({ a: { switches: { mxfp4: "fused" } }, b: { switches: { mxfp4: "unpacked" } } }, reference),
    ).toEqual({ a: "mxfp4=fused", b: "mxfp4=unpacked" });
    expect(
      abArmNames(
        {
          a: { switches: { mxfp4: "fused" }, name: "fused MXFP4 experts" },
          b: { switches: { mxfp4: "unpacked" } },
        },
        reference,
      ),
    ).toEqual({ a: "fused MXFP4 experts", b: "mxfp4=unpacked" });
  });

  it("name converted weights where the arms differ in them", () => {
    const fp8 = { to: "fp8", fp8_block: "block32" } as const;
    expect(abArmBuild({ weights: fp8 }, reference).weights).toEqual(fp8);
    expect(abArmNames({ a: {}, b: { weights: fp8 } }, reference).b).toBe(
      "weights converted to FP8 E4M3 with a scale per 32 values",
    );
    expect(buildKey({ kv_layout: "full", weights: fp8 })).not.toBe(buildKey({ kv_layout: "full" }));
    expect(withAb({}, { weights: fp8 }).success).toBe(true);
  });

  it("compare by layout and sorted switches", () => {
    const one = { kv_layout: "full" as const, switches: { b: "1", a: "2" } };
    const two = { kv_layout: "full" as const, switches: { a: "2", b: "1" } };
    expect(buildKey(one)).toBe(buildKey(two));
    expect(buildKey(one)).not.toBe(buildKey({ kv_layout: "full" }));
    expect(describeBuild(one)).toBe("full KV layout, a=2, b=1");
  });

  it("are refused at manifest load when the two are the same build or have the same name", () => {
    expect(withAb({ kv_layout: "full" }, { kv_layout: "window-sized" }).success).toBe(true);
    expect(withAb({ switches: { mxfp4: "fused" } }, { switches: { mxfp4: "unpacked" } }).success).toBe(true);
    const same = withAb({}, { kv_layout: "window-sized", switches: { dsa_indexer: "fp8" } });
    expect(same.error?.issues[0]?.message).toMatch(/arms a and b are the same build/);
    expect(same.error?.issues[0]?.path).toEqual(["benchmarks", 0]);
    const named = withAb(
      { switches: { mxfp4: "fused" }, name: "MXFP4 experts" },
      { switches: { mxfp4: "unpacked" }, name: "MXFP4 experts" },
    );
    expect(named.error?.issues[0]?.message).toMatch(/both named "MXFP4 experts"/);
    expect(withAb({ kv_layout: "full", weights: "fp8" }, { kv_layout: "window-sized" }).success).toBe(false);
  });
});

describe("a build's step size", () => {
  it("names the chunked prefill and keeps it apart from the same build at the engine's default", () => {
    const chunked = { kv_layout: "full" as const, max_num_batched_tokens: 61 };
    expect(describeBuild(chunked)).toBe("full KV layout, prefill in chunks of 61 tokens");
    expect(buildKey(chunked)).not.toBe(buildKey({ kv_layout: "full" }));
    expect(buildKey({ kv_layout: "full" })).toBe(JSON.stringify(["full", [], null]));
  });
});

describe("a bit-identical decode gate's decodes in flight", () => {
  const gate = (compare: string) => ({
    kind: "bit-identical-decode",
    compare,
    sampling: ["greedy"],
    concurrent: 16,
    record: "p/decode",
  });
  const parse = (compare: string) =>
    Reference.safeParse({ config: { model_type: "x" }, max_model_len: 256, gates: [gate(compare)] });

  it("are a batch-invariance setting, refused on another comparison by name", () => {
    expect(parse("batch-invariance").success).toBe(true);
    const refused = parse("two-builds");
    expect(refused.success).toBe(false);
    expect(refused.error?.issues[0]?.path).toEqual(["gates", 0, "concurrent"]);
  });
});
