import { describe, expect, it } from "vitest";
import { parseYamlSource } from "./yaml-source.js";

const TEXT = [
  "# comment",
  "id: demo",
  "model:",
  "  name: Demo",
  "gates:",
  "  - kind: needles",
  "    needles: 3",
  "",
].join("\n");

describe("parseYamlSource", () => {
  it("maps paths to the line of their key, item or nearest ancestor", () => {
    const source = parseYamlSource(TEXT, "port.yaml");
    expect(source.problems).toEqual([]);
    expect(source.data).toEqual({
      id: "demo",
      model: { name: "Demo" },
      gates: [{ kind: "needles", needles: 3 }],
    });
    expect(source.lineOf(["id"])).toBe(2);
    expect(source.lineOf(["model", "name"])).toBe(4);
    expect(source.lineOf(["model", "family"])).toBe(3);
    expect(source.lineOf(["gates", 0])).toBe(6);
    expect(source.lineOf(["gates", 0, "needles"])).toBe(7);
    expect(source.lineOf(["gates", 0, "contexts"])).toBe(6);
    expect(source.lineOf(["model", "colour"], true)).toBe(3);
  });

  it("reports syntax errors and duplicate keys with their lines", () => {
    const duplicate = parseYamlSource("id: a\nid: b\n", "port.yaml");
    expect(duplicate.data).toBeUndefined();
    expect(duplicate.problems).toEqual([
      expect.objectContaining({
        file: "port.yaml",
        line: 2,
        message: expect.stringContaining("invalid YAML"),
      }),
    ]);
    expect(parseYamlSource("a: [1\nb: 2\n", "x.yaml").problems[0]?.line).toBeGreaterThan(0);
  });
});
