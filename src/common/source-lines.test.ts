import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

/** The longest a source file may be: past it, split the file by concept. */
const MAX_LINES = 600;
const ROOT = join(import.meta.dirname, "../..");
/** Source under src/ and bench/ (device-plugin is Python, held to its own tools); tests apart. */
const SOURCE = /\.(ts|mjs|wat)$/;
const TEST = /\.test\.ts$/;

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && SOURCE.test(e.name) && !TEST.test(e.name))
    .map((e) => join(e.parentPath, e.name));
}

describe("source files", () => {
  it(`are at most ${MAX_LINES} lines each (a longer one is split by concept)`, async () => {
    const files = [...(await sourceFiles(join(ROOT, "src"))), ...(await sourceFiles(join(ROOT, "bench")))];
    expect(files.length).toBeGreaterThan(100);
    const over: string[] = [];
    for (const file of files) {
      const lines = (await readFile(file, "utf8")).split("\n").length - 1;
      if (lines > MAX_LINES) over.push(`${relative(ROOT, file)}: ${lines} lines`);
    }
    expect(over).toEqual([]);
  });
});
