import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { datasetWorkload, randomWorkload, sharedPrefixWorkload } from "./workload.js";

describe("workloads", () => {
  it("repeats a random workload for one seed and changes with the seed", () => {
    const a = randomWorkload({ numPrompts: 4, inputLen: 8, outputLen: 5, seed: 1 });
    expect(randomWorkload({ numPrompts: 4, inputLen: 8, outputLen: 5, seed: 1 })).toEqual(a);
    expect(randomWorkload({ numPrompts: 4, inputLen: 8, outputLen: 5, seed: 2 }).hash).not.toBe(a.hash);
    expect(a.requests.every((r) => r.prompt.length === 8 && r.maxTokens === 5)).toBe(true);
    expect(() => randomWorkload({ numPrompts: 0, inputLen: 8, outputLen: 5, seed: 1 })).toThrow(
      /num-prompts/,
    );
  });

  it("shares one prefix across prompts", () => {
    const w = sharedPrefixWorkload({ numPrompts: 3, prefixLen: 6, suffixLen: 2, outputLen: 4, seed: 1 });
    const prefixes = w.requests.map((r) => JSON.stringify((r.prompt as number[]).slice(0, 6)));
    expect(new Set(prefixes).size).toBe(1);
  });

  it("reads a dataset file and names a bad line", async () => {
    const dir = await mkdtemp(join(tmpdir(), "bringup-ds-"));
    try {
      const good = join(dir, "good.jsonl");
      await writeFile(good, '{"prompt": "hello"}\n{"prompt": [1, 2], "output_len": 7}\n');
      const w = await datasetWorkload({ path: good, numPrompts: 5, outputLen: 3, seed: 1 });
      expect(w.requests.length).toBe(5);
      expect(w.requests.every((r) => (r.prompt === "hello" ? r.maxTokens === 3 : r.maxTokens === 7))).toBe(
        true,
      );
      const bad = join(dir, "bad.jsonl");
      await writeFile(bad, '{"prompt": "x"}\n{"text": "y"}\n');
      await expect(datasetWorkload({ path: bad, numPrompts: 1, outputLen: 3, seed: 1 })).rejects.toThrow(
        /bad.jsonl:2/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
