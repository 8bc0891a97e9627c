/**
 * A module as a git revision has it, for bench/kernel-before-after.ts's before arm (e.g. the FP8
 * rows' `.quads` rewrite at --before, which must match that revision's kernel text): copied with
 * the modules it imports into a temporary directory and imported from there.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

/** `sources[0]` at `revision` of the checkout at `root`, beside the rest of `sources` (those the revision has). */
export async function importAtRevision<T>(
  root: string,
  revision: string,
  sources: readonly string[],
): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "revision-module-"));
  try {
    for (const source of sources) {
      const at = `${revision}:${source}`;
      if (spawnSync("git", ["cat-file", "-e", at], { cwd: root }).status !== 0) continue;
      mkdirSync(dirname(join(dir, source)), { recursive: true });
      writeFileSync(join(dir, source), execFileSync("git", ["show", at], { cwd: root, encoding: "utf8" }));
    }
    return (await import(pathToFileURL(join(dir, sources[0] as string)).href)) as T;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
