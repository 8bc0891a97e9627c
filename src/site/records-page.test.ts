import { describe, expect, it } from "vitest";
import { renderRecordsPage } from "./records-page.js";
import { manifest, port, record } from "./tests/fixture.js";

const root = "/nowhere";

describe("the records page", () => {
  it("lists every record of every port newest first as cards carrying what the filters read", () => {
    const older = record("a-port/decode", { recorded_at: "2026-01-01T00:00:00Z" });
    const gate = record("b-port/reference-perplexity", {
      label: "perplexity over 4 windows: gate passed",
      method: "same-pod-ab",
      source: { kind: "measured", tool: "bringup up" },
      arms: [
        { name: "a", samples: [2.5], fingerprint: { host: "h", software: { bringup: "0.1.0" } } },
        { name: "b", samples: [2.5], fingerprint: { host: "h", software: { bringup: "0.1.0" } } },
      ],
      recorded_at: "2026-12-03T10:00:00Z",
    });
    const trial = record("b-port/reference-decode-ab-t001-a", { recorded_at: "2026-12-04T00:00:00Z" });
    const b = port(root, manifest("b-port"), "x", [gate, trial]);
    b.localRecords = new Set([gate.id]);
    const page = renderRecordsPage({ root, ports: [port(root, manifest("a-port"), "x", [older]), b] });
    const cards = page.split("\n").filter((line) => line.startsWith("- "));
    expect(cards).toHaveLength(2);
    expect(cards[0]).toMatch(/^- \*\*`b-port\/reference-perplexity`\*\* /);
    expect(cards[0]).toContain("](./ports/b-port.md#record-b-port--reference-perplexity){data-record=");
    expect(cards[0]).toMatch(
      /\{#record-b-port--reference-perplexity data-port="b-port" data-kind="gate" data-method="same-pod-ab" data-where="local-unpublished" data-date="2026-12-03"\}$/,
    );
    expect(cards[0]).toContain("local\\, bringup\\'s CPU engine\\, not published");
    expect(cards[1]).toMatch(
      /data-kind="reported" data-method="single-run" data-where="reported" data-date="2026-01-01"\}$/,
    );
    expect(page).toContain("{.record-list}");
  });
});
