import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CheerioAPI } from "cheerio";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Catalog } from "../catalog/index.js";
import { buildSite, SITE_MARKER } from "./build.js";
import { clean, expectIndex, expectPortPage, expectSections, loadPage } from "./tests/expectations.js";
import { manifest, port, record, writePorts } from "./tests/fixture.js";

const NAME = "Evil {{ 7*7 }} <script>alert(1)</script> | pipe";
const SUMMARY = "uses *stars*, _under_, [a link](http://example.com), `ticks` and {{ $route.path }}";
const HEADLINE = "<img src=x onerror=alert(1)> & {{ 1+1 }}";
const README = [
  "# Title {{ 1+1 }}",
  "",
  "<script>window.pwned = 1</script>",
  "",
  "::: tip",
  "inside a container",
  ":::",
  "",
  "After the container: [[fig:evil/decode]], not `[[fig:evil/decode]]`.",
  "",
  "{{ secret }}",
].join("\n");

/** One VitePress build of a catalog full of Markdown, HTML and Vue syntax, over an earlier build. */
describe("buildSite with hostile catalog strings", () => {
  let work: string;
  let outDir: string;
  let catalog: Catalog;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "bringup-site-escape-"));
    const root = join(work, "root");
    const evil = manifest("evil", {
      model: { name: NAME, family: "f|g", total_params_b: 1020, weight_formats: ["mxfp4", "fp8"] },
      hard: { summary: SUMMARY, features: ["attention.sinks", "kv.window-sized"] },
      target: {
        accelerator: "gaudi2",
        cards: 8,
        nodes: 1,
        variants: [{ name: "two {{ nodes }}", cards: 16, nodes: 2, documented: true, note: "<b>note</b>" }],
      },
      cookbook_kernels: ["mxfp4-moe-decode"],
      headline: [{ record: "evil/decode" }, { text: HEADLINE }, { record: "evil/versus" }],
      gates: [
        { kind: "perplexity", reference: "the {{ ref }}", max_relative_diff: 0.004, record: "evil/ppl" },
      ],
    });
    const records = [
      record("evil/decode", { label: "decode | {{ speed }}" }),
      record("evil/versus", {
        method: "different-conditions",
        label: "one node vs two",
        conditions: [{ name: "nodes {{ n }}", a: "1 <one>", b: "2 *two*" }],
        arms: [
          { name: "one", figure: { shape: "point", value: 44.5 } },
          { name: "two", figure: { shape: "range", low: 36.4, high: 38.2 } },
        ],
      }),
      record("evil/ppl", {
        unit: "%",
        method: "reported",
        context: undefined,
        arms: [{ name: "port", figure: { shape: "at-most", value: 0.4 } }],
      }),
    ];
    const plain = manifest("plain", {
      software: { gaudi_software: "1.24.1", execution_mode: "torch-compile-static", hpu_graphs: false },
    });
    catalog = { root, ports: [port(root, evil, README, records), port(root, plain, "Plain prose.\n")] };
    await writePorts(catalog);
    // An earlier build at the same place: replaced whole, stale pages included.
    outDir = join(work, "site");
    await mkdir(outDir);
    await writeFile(join(outDir, SITE_MARKER), "{}\n");
    await writeFile(join(outDir, "stale.html"), "old");
    await buildSite(catalog, outDir);
  });

  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  const noScripts = ($: CheerioAPI) => {
    expect($(".vp-doc script")).toHaveLength(0);
    expect($(".vp-doc img")).toHaveLength(0);
  };

  it("replaces the earlier build whole and leaves no temporary directory", async () => {
    const files = await readdir(outDir);
    expect(files).not.toContain("stale.html");
    expect(files).toEqual(expect.arrayContaining([SITE_MARKER, "index.html"]));
    expect((await readdir(work)).sort()).toEqual(["root", "site"]);
  });

  it("shows every string of the index literally, with the rows still derived from the catalog", async () => {
    const $ = await loadPage(outDir, "index.html");
    noScripts($);
    expectIndex($, catalog);
    expectSections($, catalog);
    const text = clean($(".vp-doc").text());
    expect(text).toContain(NAME);
    expect(text).toContain(clean(HEADLINE));
    expect($(".vp-doc a[href^='http://example.com']")).toHaveLength(0);
  });

  it("shows README prose literally, fills its figures and keeps code as written", async () => {
    const $ = await loadPage(outDir, "ports/evil.html");
    noScripts($);
    expectPortPage($, catalog, catalog.ports[0] as Catalog["ports"][number]);
    const text = clean($(".vp-doc").text());
    expect(clean($(".vp-doc h1").first().text())).toBe("Title {{ 1+1 }}");
    expect(text).toContain("<script>window.pwned = 1</script>");
    expect(text).toContain("{{ secret }}");
    expect(text).toContain("inside a container");
    expect(text).toContain("After the container: 43.9 tok/s at one stream (single run, reported)");
    expect(
      $(".vp-doc code")
        .toArray()
        .map((c) => $(c).text()),
    ).toContain("[[fig:evil/decode]]");
    expect(text).toContain("the {{ ref }}");
    expect(text).toContain("<b>note</b>");
  });

  it("escapes the model name in the sidebar, which VitePress renders as HTML", async () => {
    const $ = await loadPage(outDir, "ports/plain.html");
    const links = $("nav a, aside a, .VPSidebar a")
      .toArray()
      .map((a) => clean($(a).text()));
    expect(links).toContain(NAME);
    expect($(".VPSidebar script")).toHaveLength(0);
  });
});
