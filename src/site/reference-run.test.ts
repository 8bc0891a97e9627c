import { describe, expect, it } from "vitest";
import type { PortManifestInput } from "../catalog/index.js";
import { latestInSeries } from "../catalog/index.js";
import { renderReferenceRun } from "./reference-run.js";
import { manifest, port, record } from "./tests/fixture.js";

const reference: PortManifestInput["reference"] = {
  config: { model_type: "demo" },
  max_model_len: 32768,
  kv_layout: "window-sized",
  baseline: { kv_layout: "full" },
  gates: [
    { kind: "kv-capacity", expected_ratio: 5.33, tolerance: 0.02, record: "a-port/ref-kv" },
    { kind: "needles", model: "retrieval", contexts: [16384], needles: 3, min_retrieved: 3 },
  ],
  benchmarks: [
    {
      kind: "ab",
      metric: "decode_tok_s",
      a: { kv_layout: "full" },
      b: { kv_layout: "window-sized" },
      prompt_tokens: 4096,
      output_tokens: 32,
      blocks: 3,
      record: "a-port/ref-ab",
    },
  ],
};

const measured = (id: string, value: number) =>
  record(id, {
    method: "same-pod-ab",
    unit: "tok/s",
    label: "decode",
    context: undefined,
    source: { kind: "measured", tool: "bringup up" },
    arms: [
      { name: "full KV layout", samples: [10, 11] },
      { name: "window-sized KV layout", samples: [12, 13] },
    ],
    comparison: { figure: { shape: "point", value }, ci95: [value - 0.1, value + 0.1], better: "higher" },
  });

describe("the reference run section", () => {
  it("takes the highest run of a series, not a record that only shares its prefix", () => {
    const records = [
      measured("a-port/ref-ab", 1.1),
      measured("a-port/ref-ab.3", 1.3),
      measured("a-port/ref-ab.2", 1.2),
    ];
    expect(latestInSeries(records, "a-port/ref-ab")?.id).toBe("a-port/ref-ab.3");
    expect(latestInSeries([measured("a-port/ref-ab-long", 2)], "a-port/ref-ab")).toBeUndefined();
  });

  it("shows each reference gate and A/B with its latest figure and method, or that it is not measured yet", () => {
    const m = manifest("a-port", { reference });
    const page = renderReferenceRun(
      port("/nowhere", m, "x", [measured("a-port/ref-ab", 1.1), measured("a-port/ref-ab.2", 1.25)]),
    );
    expect(page).toContain("### Reference run");
    expect(page).toContain("ratio 1\\.25x\\, 95\\% CI 1\\.15x to 1\\.35x");
    expect(page).toContain("same\\-pod A\\/B");
    expect(page).toContain("`a-port/ref-ab.2`");
    expect(page).not.toContain("ratio 1\\.1x");
    // The needle gate names no record, so it is shown from its default series.
    expect(page).toContain("`a-port/reference-needles`");
    expect(page?.match(/not measured yet/g)).toHaveLength(2);
  });

  it("shows the run its prose cites, so prose and table show one record, and names a newer run", () => {
    const m = manifest("a-port", { reference });
    const page = renderReferenceRun(
      port("/nowhere", m, "Decode: [[fig:a-port/ref-ab.2]].", [
        measured("a-port/ref-ab.2", 1.25),
        measured("a-port/ref-ab.3", 1.5),
      ]),
    );
    expect(page).toContain("ratio 1\\.25x");
    expect(page).not.toContain("ratio 1\\.5x");
    expect(page).toContain("`a-port/ref-ab.2`; newer run `a-port/ref-ab.3` in Records");
  });

  it("is left out for a port without a reference section", () => {
    expect(renderReferenceRun(port("/nowhere", manifest("a-port"), "x"))).toBeUndefined();
  });
});
