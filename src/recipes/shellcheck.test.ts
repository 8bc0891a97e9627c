import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fixtureManifest } from "./fixtures/index.js";
import { generateRecipe } from "./generate.js";

const available = spawnSync("shellcheck", ["--version"]).status === 0;
const why = available
  ? ""
  : " [SKIPPED: shellcheck is not on PATH; apt-get install -y shellcheck, as .ci/run does]";

describe("shellcheck", () => {
  for (const fixture of ["complete-lazy", "complete-compile"]) {
    it.skipIf(!available)(`passes every generated script of ${fixture}${why}`, async () => {
      const dir = await mkdtemp(join(tmpdir(), "bringup-shellcheck-"));
      try {
        const scripts = generateRecipe(await fixtureManifest(fixture)).filter((file) =>
          file.path.endsWith(".sh"),
        );
        expect(scripts.length).toBe(2);
        const paths: string[] = [];
        for (const script of scripts) {
          const path = join(dir, script.path.replaceAll("/", "_"));
          await writeFile(path, script.content);
          paths.push(path);
        }
        // POSIX sh, every severity (style included): the scripts must be clean, not merely safe.
        const result = spawnSync("shellcheck", ["--shell=sh", "--severity=style", ...paths], {
          encoding: "utf8",
        });
        expect(result.stdout + result.stderr).toBe("");
        expect(result.status).toBe(0);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  }
});
