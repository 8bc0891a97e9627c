import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkCatalog, type Diagnostic } from "./check.js";

const FIXTURES = join(import.meta.dirname, "fixtures");
const broken = (name: string) => join(FIXTURES, "broken", name);

interface Case {
  file: string;
  line?: number;
  field?: string;
  message: string;
  expected: string;
}

/** Each broken fixture differs from the valid demo port by one defect and yields exactly one diagnostic. */
const CASES: Record<string, Case> = {
  "unknown-field": {
    file: "ports/demo/port.yaml",
    line: 6,
    field: "model.colour",
    message: 'unknown field "colour"',
    expected: "total_params_b",
  },
  "unknown-feature": {
    file: "ports/demo/port.yaml",
    line: 16,
    field: "hard.features.1",
    message: "not an accepted value",
    expected: "attention.sinks",
  },
  "wrong-type": {
    file: "ports/demo/port.yaml",
    line: 19,
    field: "target.cards",
    message: "wrong type",
    expected: "a number",
  },
  "unknown-gate-kind": {
    file: "ports/demo/port.yaml",
    line: 28,
    field: "gates.0.kind",
    message: "unknown kind",
    expected: "needles",
  },
  "missing-readme": { file: "ports/demo/README.md", message: "missing required file", expected: "README.md" },
  "missing-manifest": {
    file: "ports/demo/port.yaml",
    message: "missing required file",
    expected: "port.yaml",
  },
  "id-mismatch": {
    file: "ports/demo/port.yaml",
    line: 2,
    field: "id",
    message: "id demo-2 does not match its directory demo",
    expected: "id: demo",
  },
  "dangling-record-ref": {
    file: "ports/demo/port.yaml",
    line: 33,
    field: "headline.0.record",
    message: "names record demo/prefill",
    expected: "ports/demo/results/*.jsonl",
  },
  "figure-without-method": {
    file: "ports/demo/results/records.jsonl",
    line: 2,
    field: "method",
    message: "missing",
    expected: "same-pod-ab",
  },
  "conditions-missing": {
    file: "ports/demo/results/records.jsonl",
    line: 1,
    field: "conditions",
    message: "different-conditions must name each condition",
    expected: "{ name, a, b }",
  },
  "unknown-method": {
    file: "ports/demo/results/records.jsonl",
    line: 1,
    field: "method",
    message: "not an accepted value",
    expected: "different-conditions",
  },
  "bad-unit": {
    file: "ports/demo/results/records.jsonl",
    line: 2,
    field: "unit",
    message: "not an accepted value",
    expected: "tok/s",
  },
  "unknown-record-field": {
    file: "ports/demo/results/records.jsonl",
    line: 1,
    field: "colour",
    message: 'unknown field "colour"',
    expected: "recorded_at",
  },
  "bad-jsonl-line": {
    file: "ports/demo/results/records.jsonl",
    line: 2,
    message: "not valid JSON",
    expected: "one JSON record object per line",
  },
  "foreign-record": {
    file: "ports/demo/results/records.jsonl",
    line: 3,
    field: "port",
    message: "belongs to port other",
    expected: 'port "demo"',
  },
  "same-pod-hosts-differ": {
    file: "ports/demo/results/records.jsonl",
    line: 1,
    field: "arms.1.fingerprint.host",
    message: "differ in host",
    expected: "different-conditions",
  },
  "unbacked-prose": {
    file: "ports/demo/README.md",
    line: 12,
    message: '"99.9 tok/s" is a figure',
    expected: "[[fig:demo/<slug>]]",
  },
  "dangling-figure-ref": {
    file: "ports/demo/README.md",
    line: 13,
    message: "[[fig:demo/prefill]] names no record",
    expected: "[[fig:demo/<slug>]]",
  },
  "unbacked-manifest-text": {
    file: "ports/demo/port.yaml",
    line: 34,
    field: "headline.1.text",
    message: '"99 tok/s" is a figure',
    expected: "{ record: demo/<slug> }",
  },
  "dangling-chained-from": {
    file: "ports/demo/results/records.jsonl",
    line: 1,
    field: "chained_from.0",
    message: "chained from demo/step-one",
    expected: "an A/B record of port demo",
  },
  "unknown-entry": {
    file: "ports/demo/notes.txt",
    message: "unknown entry",
    expected: "port.yaml, README.md",
  },
  "results-not-store": {
    file: "ports/demo/results/plot.png",
    message: "not a record store",
    expected: "*.jsonl",
  },
};

function matching(expected: Case) {
  const where = Object.fromEntries(
    Object.entries({ file: expected.file, line: expected.line, field: expected.field }).filter(
      ([, value]) => value !== undefined,
    ),
  );
  return expect.objectContaining({
    ...where,
    message: expect.stringContaining(expected.message),
    expected: expect.stringContaining(expected.expected),
  });
}

describe("checkCatalog", () => {
  it("passes the valid fixture catalog", async () => {
    expect(await checkCatalog(join(FIXTURES, "valid"))).toEqual([]);
  });

  it("passes every real port", async () => {
    expect(await checkCatalog(join(import.meta.dirname, "../.."))).toEqual([]);
  });

  it.each(Object.entries(CASES))(
    "reports the one defect of %s with file, place and expectation",
    async (name, expected) => {
      expect(await checkCatalog(broken(name))).toEqual([matching(expected)]);
    },
  );

  it("reports a duplicate id at the second manifest's id line", async () => {
    const diagnostics = await checkCatalog(broken("duplicate-id"));
    expect(diagnostics).toContainEqual(
      matching({
        file: "ports/demo-copy/port.yaml",
        line: 2,
        field: "id",
        message: "duplicate port id demo, also declared by ports/demo/port.yaml",
        expected: "an id no other port uses",
      }),
    );
  });

  it("checks only the named port, and refuses a port that does not exist", async () => {
    expect(await checkCatalog(broken("duplicate-id"), "demo")).toEqual([]);
    await expect(checkCatalog(broken("duplicate-id"), "nope")).rejects.toMatchObject({
      code: "PORT_NOT_FOUND",
    });
    await expect(checkCatalog(join(FIXTURES, "absent"))).rejects.toMatchObject({ code: "CATALOG_NOT_FOUND" });
  });

  describe("on a copy of the valid catalog", () => {
    let root: string;
    beforeAll(async () => {
      root = await mkdtemp(join(tmpdir(), "bringup-check-"));
      await cp(join(FIXTURES, "valid"), root, { recursive: true });
    });
    afterAll(async () => {
      await rm(root, { recursive: true, force: true });
    });

    // Biome formats the YAML in the tree, so the unparsable manifest is made here rather than kept as a fixture.
    it("gives the line of a YAML syntax error", async () => {
      const path = join(root, "ports/demo/port.yaml");
      const good = await readFile(path, "utf8");
      await writeFile(path, good.replace("  cards: 8\n", "  cards: [8\n"));
      let diagnostics: Diagnostic[] = [];
      try {
        diagnostics = await checkCatalog(root);
      } finally {
        await writeFile(path, good);
      }
      expect(diagnostics).toEqual([
        expect.objectContaining({
          file: "ports/demo/port.yaml",
          line: 20,
          message: expect.stringContaining("invalid YAML"),
          expected: expect.stringContaining("well-formed YAML"),
        }),
      ]);
    });

    it("does not require reference records yet to be measured, but each must be the port's and its own series", async () => {
      const path = join(root, "ports/demo/port.yaml");
      const good = await readFile(path, "utf8");
      const reference = (records: string[]) =>
        [
          "reference:",
          "  config: { model_type: demo }",
          "  max_model_len: 4096",
          "  gates:",
          ...records.map(
            (record) => `    - { kind: kv-capacity, expected_ratio: 2, tolerance: 0.02, record: ${record} }`,
          ),
          "",
        ].join("\n");
      let unmeasured: Diagnostic[] = [];
      let wrong: Diagnostic[] = [];
      try {
        await writeFile(path, `${good}${reference(["demo/ref-kv"])}`);
        unmeasured = await checkCatalog(root);
        await writeFile(path, `${good}${reference(["other/ref-kv", "demo/ref-kv", "demo/ref-kv"])}`);
        wrong = await checkCatalog(root);
      } finally {
        await writeFile(path, good);
      }
      // A reference section gives the port engine model code, so it also needs a recipe; that check
      // has tests of its own (src/recipes/generate.test.ts).
      const notRecipe = (d: Diagnostic) => !/\/(recipe|tests\/hpu)\//.test(d.file);
      expect(unmeasured.filter(notRecipe)).toEqual([]);
      expect(wrong.filter(notRecipe)).toEqual([
        matching({
          file: "ports/demo/port.yaml",
          field: "reference.gates.0.record",
          message: "names record other/ref-kv, which is not a record of port demo",
          expected: "demo/<slug>",
        }),
        matching({
          file: "ports/demo/port.yaml",
          field: "reference.gates.2.record",
          message: "names record series demo/ref-kv, which reference.gates.1.record names too",
          expected: "a record id of its own",
        }),
      ]);
    });

    it("flags a stray file in ports/ itself", async () => {
      await writeFile(join(root, "ports/TODO"), "x");
      try {
        expect(await checkCatalog(root)).toEqual([
          matching({ file: "ports/TODO", message: "unexpected entry", expected: "README.md" }),
        ]);
      } finally {
        await rm(join(root, "ports/TODO"));
      }
    });
  });
});

it("every diagnostic across the broken fixtures names a file and what was expected", async () => {
  const all = (
    await Promise.all([...Object.keys(CASES), "duplicate-id"].map((name) => checkCatalog(broken(name))))
  ).flat();
  expect(all.length).toBeGreaterThanOrEqual(Object.keys(CASES).length + 1);
  for (const diagnostic of all) {
    expect(diagnostic.file).toMatch(/^ports\//);
    expect(diagnostic.expected).toBeTruthy();
  }
});
