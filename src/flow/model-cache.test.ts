import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cacheKey, sourceDigest, WEIGHTS_CODE_DIRS, weightsCode } from "./model-cache.js";

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-digest-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A source tree `name` holding `files` (path to text). */
async function tree(name: string, files: Record<string, string>): Promise<string> {
  const dir = join(root, name);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(dir, path, ".."), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

const SOURCES = { "models/mimo.ts": "export const a = 1;\n", "blocks/moe.ts": "export const b = 2;\n" };

describe("sourceDigest", () => {
  it("is the same for the same sources wherever they are, and changes with any source file", async () => {
    const one = await sourceDigest([await tree("one", SOURCES)]);
    expect(one).toMatch(/^[0-9a-f]{16}$/);
    expect(await sourceDigest([await tree("two", SOURCES)])).toBe(one);
    const edited = await tree("edited", { ...SOURCES, "blocks/moe.ts": "export const b = 3;\n" });
    expect(await sourceDigest([edited])).not.toBe(one);
    const moved = await tree("moved", {
      "models/mimo.ts": SOURCES["models/mimo.ts"],
      "moe.ts": SOURCES["blocks/moe.ts"],
    });
    expect(await sourceDigest([moved])).not.toBe(one);
  });

  it("leaves out tests, which decide no weights", async () => {
    const one = await sourceDigest([await tree("plain", SOURCES)]);
    const tested = await tree("tested", {
      ...SOURCES,
      "models/mimo.test.ts": "it();\n",
      "tests/golden.json": "{}\n",
    });
    expect(await sourceDigest([tested])).toBe(one);
  });

  it("keys cached weights on the engine's sources, where every model family lives", async () => {
    const engine = await tree("engine", SOURCES);
    const key = cacheKey(await weightsCode([engine]));
    expect(cacheKey(await weightsCode([engine]))).toBe(key);
    await writeFile(join(engine, "blocks/moe.ts"), "export const b = 4;\n");
    expect(cacheKey(await weightsCode([engine]))).not.toBe(key);
    expect(WEIGHTS_CODE_DIRS.map((dir) => dir.split(/[/\\]/).at(-1))).toEqual(["engine", "formats"]);
  });
});
