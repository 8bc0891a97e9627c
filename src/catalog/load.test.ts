import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findPort, loadCatalog } from "./load.js";

const FIXTURES = join(import.meta.dirname, "fixtures");

describe("loadCatalog", () => {
  it("loads every port sorted by id, with manifest, page and records", async () => {
    const catalog = await loadCatalog(join(FIXTURES, "valid"));
    expect(catalog.root).toBe(join(FIXTURES, "valid"));
    expect(catalog.ports.map((port) => port.id)).toEqual(["bare", "demo"]);
    const demo = catalog.ports[1];
    expect(demo?.dir).toBe(join(FIXTURES, "valid/ports/demo"));
    expect(demo?.manifest.hard.features).toEqual(["attention.sliding-window", "attention.sinks"]);
    expect(demo?.readme).toContain("[[fig:demo/decode]]");
    expect(demo?.records.map((record) => record.id)).toEqual(["demo/decode", "demo/perplexity"]);
    expect(catalog.ports[0]?.records).toEqual([]);
  });

  it("sets a broken port aside, with its problems, and loads the others", async () => {
    const catalog = await loadCatalog(join(FIXTURES, "broken/duplicate-id"));
    expect(catalog.ports.map((port) => port.id)).toEqual(["demo"]);
    expect(catalog.broken?.map((port) => port.id)).toEqual(["demo-copy"]);
    expect(() => findPort(catalog, "demo")).not.toThrow();
    const error = (() => {
      try {
        findPort(catalog, "demo-copy");
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toMatchObject({ code: "PORT_BROKEN" });
    const message = (error as Error).message;
    expect(message).toContain(
      "ports/demo-copy/port.yaml:2: id: id demo does not match its directory demo-copy",
    );
    expect(message).toContain("ports/demo-copy/port.yaml:2: id: duplicate port id demo");
  });

  it("loads the eleven real ports", async () => {
    const catalog = await loadCatalog(join(import.meta.dirname, "../.."));
    expect(catalog.ports).toHaveLength(11);
    for (const port of catalog.ports) expect(port.manifest.id).toBe(port.id);
  });
});
