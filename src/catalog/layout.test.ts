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
      .map((line) => /^\| `([^`]+)` \| (file|dir) \| (required now|gained) \|/.exec(line))
      .filter((match) => match !== null)
      .map(([, path, kind, when]) => ({ path, kind, stage: WHEN[when as keyof typeof WHEN] }));
    expect(rows).toEqual(PORT_LAYOUT.map(({ path, kind, stage }) => ({ path, kind, stage })));
  });

  it("allows at the top of a port only the first segment of each path", () => {
    expect([...topLevelEntries()]).toEqual([
      ["port.yaml", "file"],
      ["README.md", "file"],
      ["results", "dir"],
      ["model.ts", "file"],
      ["tests", "dir"],
      ["recipe", "dir"],
    ]);
  });
});
