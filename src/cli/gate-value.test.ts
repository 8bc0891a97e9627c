import { describe, expect, it } from "vitest";
import { formatGateValue } from "./gate-value.js";

describe("a gate's value in the summary", () => {
  it("says what a count counts", () => {
    const gate = {
      kind: "bit-identical-decode",
      status: "passed",
      summary: "4/4 decodes bit-identical",
      value: 0,
      unit: "count",
      label: "positions differing between decodes, one at a time vs batched",
    } as const;
    expect(formatGateValue(gate)).toBe("0 positions differing between decodes");
  });

  it("keeps a measurement's unit, and names the code of a gate that did not run", () => {
    expect(
      formatGateValue({
        kind: "perplexity",
        status: "passed",
        summary: "",
        value: 1.23456,
        unit: "perplexity",
      }),
    ).toBe("1.2346 perplexity");
    expect(
      formatGateValue({ kind: "perplexity", status: "not-run", summary: "", code: "GATE_NEEDS_REFERENCE" }),
    ).toBe("GATE_NEEDS_REFERENCE");
  });
});
