import { execFile } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const BENCH = join(import.meta.dirname, "..", "bench");
const run = promisify(execFile);

/** The bench scripts a person runs: every bench/*.ts that exports nothing (the rest are shared modules). */
async function scripts(): Promise<string[]> {
  const files = (await readdir(BENCH)).filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"));
  const sources = await Promise.all(files.map((f) => readFile(join(BENCH, f), "utf8")));
  return files.filter((_, i) => !/^export /m.test(sources[i] as string));
}

/** Exit code, stdout and stderr of `npx tsx bench/<script> ...args`. */
async function bench(script: string, ...args: string[]) {
  try {
    const { stdout, stderr } = await run("npx", ["tsx", join(BENCH, script), ...args], { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe("bench scripts", () => {
  it("each answer --help with their flags and exit 0, doing no work", async () => {
    const all = await scripts();
    expect(all.length).toBeGreaterThan(5);
    const results = await Promise.all(all.map((script) => bench(script, "--help")));
    results.forEach((result, i) => {
      expect({ script: all[i], code: result.code }).toEqual({ script: all[i], code: 0 });
      expect(result.stdout).toMatch(/^usage: npx tsx bench\//);
    });
  }, 120_000);

  it("refuse an unknown flag with the usage and exit 2", async () => {
    const result = await bench("weights-decode.ts", "--no-such-flag");
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /Unknown option '--no-such-flag'[\s\S]*usage: npx tsx bench\/weights-decode\.ts/,
    );
  });
});
