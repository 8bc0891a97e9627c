import { describe, expect, it } from "vitest";
import type { Catalog } from "../catalog/index.js";
import { isBringupError } from "../common/errors.js";
import { renderSite } from "./site.js";
import { manifest, port, record } from "./tests/fixture.js";

const root = "/nowhere";

function errorOf(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (error) {
    if (isBringupError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("expected a BringupError");
}

describe("renderSite", () => {
  it("makes the index, one page per port in catalog order, the records and the platform findings", () => {
    const catalog: Catalog = {
      root,
      ports: [port(root, manifest("b-port"), "# B\n"), port(root, manifest("a-port"), "prose\n")],
    };
    const site = renderSite(catalog, new Map());
    expect(site.pages.map((page) => page.path)).toEqual([
      "index.md",
      "ports/b-port.md",
      "ports/a-port.md",
      "records.md",
      "platform-findings.md",
    ]);
    const a = site.pages[2]?.markdown ?? "";
    expect(a).toContain("# Model a\\-port");
    const b = site.pages[1]?.markdown ?? "";
    expect(b.match(/^# /gm)).toHaveLength(1);
  });

  it("fills figure references in prose and leaves those in code as written", () => {
    const r = record("a-port/decode");
    const readme =
      "Decode ran at [[fig:a-port/decode]].\n\n`[[fig:a-port/decode]]`\n\n```\n[[fig:a-port/decode]]\n```\n";
    const site = renderSite({ root, ports: [port(root, manifest("a-port"), readme, [r])] }, new Map());
    const page = site.pages[1]?.markdown ?? "";
    expect(page).toContain(
      'Decode ran at [43\\.9 tok\\/s at one stream \\(single run\\, reported\\)](#record-a-port--decode){data-record="a-port/decode" data-method="single-run"}.',
    );
    expect(page).toContain("`[[fig:a-port/decode]]`");
    expect(page).toContain("```\n[[fig:a-port/decode]]\n```");
  });

  it("makes every figure a link to its record's row carrying its id and method, and cites no unopenable source", () => {
    const r = record("a-port/decode", {
      source: { kind: "reported", where: "Ports page (seed), a row", stated_method: "single run" },
    });
    const site = renderSite(
      { root, ports: [port(root, manifest("a-port"), "Decode: [[fig:a-port/decode]].\n", [r])] },
      new Map(),
    );
    const page = site.pages[1]?.markdown ?? "";
    expect(page).toContain('](#record-a-port--decode){data-record="a-port/decode" data-method="single-run"}');
    expect(page).toContain("`a-port/decode`{#record-a-port--decode}");
    expect(page).not.toContain("Ports page");
    expect(page).toContain("::: details Figures (1)");
  });

  it("names the README line of a reference to a record that does not exist", () => {
    const readme = "line one\n\nsee [[fig:a-port/missing]]\n";
    const error = errorOf(() =>
      renderSite({ root, ports: [port(root, manifest("a-port"), readme)] }, new Map()),
    );
    expect(error.code).toBe("SITE_UNKNOWN_RECORD");
    expect(error.message).toContain("/nowhere/ports/a-port/README.md:3");
    expect(error.message).toContain("a-port/missing");
  });

  it("rejects a malformed figure reference", () => {
    const error = errorOf(() =>
      renderSite({ root, ports: [port(root, manifest("a-port"), "[[fig:Not An Id]]")] }, new Map()),
    );
    expect(error.code).toBe("SITE_BAD_FIGURE_REF");
  });

  it("rejects a headline or gate that names a missing record", () => {
    const headline = manifest("a-port", { headline: [{ record: "a-port/gone" }] });
    expect(errorOf(() => renderSite({ root, ports: [port(root, headline, "x")] }, new Map())).code).toBe(
      "SITE_UNKNOWN_RECORD",
    );
    const gate = manifest("a-port", {
      gates: [{ kind: "weights-bit-identity", conversion: "the loader", record: "a-port/gone" }],
    });
    expect(errorOf(() => renderSite({ root, ports: [port(root, gate, "x")] }, new Map())).message).toContain(
      "port.yaml (gates)",
    );
  });

  it("rejects a record that appears twice and an empty catalog", () => {
    const r = record("a-port/decode");
    const twice = { root, ports: [port(root, manifest("a-port"), "x", [r, r])] };
    expect(errorOf(() => renderSite(twice, new Map())).code).toBe("SITE_DUPLICATE_RECORD");
    expect(errorOf(() => renderSite({ root, ports: [] }, new Map())).code).toBe("SITE_EMPTY_CATALOG");
  });

  it("shows the latest throughput-latency sweep and folds the earlier ones, as every bring-up adds one", () => {
    const sweep = (stamp: string) => ({
      file: `a-port/sweep-${stamp}.sweep.svg`,
      record: `a-port/sweep-${stamp}-full-c1-output-throughput`,
      method: "single-run",
      caption: `sweep ${stamp}`,
      svg: "<svg/>",
    });
    const charts = new Map([
      ["a-port", [sweep("20261204-070000"), sweep("20261204-090000"), sweep("20261203-230000")]],
    ]);
    const site = renderSite({ root, ports: [port(root, manifest("a-port"), "x")] }, new Map(), charts);
    const page = site.pages[1]?.markdown ?? "";
    const [inView, folded] = page.split("::: details Every other measured A/B and sweep (2)");
    expect(inView).toContain("/charts/a-port/sweep-20261204-090000.sweep.svg");
    expect(inView).not.toContain("sweep-20261204-070000");
    expect(folded).toContain("/charts/a-port/sweep-20261204-070000.sweep.svg");
    expect(folded).toContain("/charts/a-port/sweep-20261203-230000.sweep.svg");
  });

  it("escapes model names for the sidebar, which VitePress renders as HTML", () => {
    const m = manifest("a-port", { model: { name: "<b>x</b>", family: "f" } });
    const site = renderSite({ root, ports: [port(root, m, "x")] }, new Map());
    expect(JSON.stringify(site.config)).toContain("&lt;b&gt;x&lt;/b&gt;");
    expect(JSON.stringify(site.config)).not.toContain("<b>");
  });
});
