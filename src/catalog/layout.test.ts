import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PORT_LAYOUT, topLevelEntries } from "./layout.js";

const WHEN = { "required now": "required", gained: "gained" } as const;

describe("the layout spec", () => {
  it("is the table ports/README.md states, row for row", async () => {
    const readme = await readFile(join(import.meta.dirname, "../../ports/README.md"), "utf8");
    const rows = readme
      .split("\n")
      .filter((line) => line.startsWith("| `"))
      .map((line) => line.split("|").map((cell) => cell.trim()))
      .map(([, path, kind, when]) => ({
        path: path?.replaceAll("`", ""),
        kind,
        stage: WHEN[when as keyof typeof WHEN],
      }));
    expect(rows).toEqual(PORT_LAYOUT.map(({ path, kind, stage }) => ({ path, kind, stage })));
  });

  it("allows at the top of a port only the first segment of each path", () => {
    expect([...topLevelEntries()]).toEqual([
      ["port.yaml", "file"],
      ["README.md", "file"],
      ["results", "dir"],
      ["tests", "dir"],
      ["recipe", "dir"],
    ]);
  });
});
