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

/** The lazy fixture with metacharacters in values the schema would reject, as a library caller might pass. */
async function hostile() {
  const manifest = await fixtureManifest("complete-lazy");
  manifest.software.pins = { ...manifest.software.pins, vllm: "1'$(x)`y`;|&", packages: { "a'b": '"$c"' } };
  manifest.software.serve_env = { VLLM_X: "'\\$z" };
  return manifest;
}

// For the hostile values shellcheck's info notes say "expressions don't expand in single quotes",
// which is the point; anything at warning level or above would be a real fault.
const cases: [string, () => ReturnType<typeof fixtureManifest>, string][] = [
  ["complete-lazy", () => fixtureManifest("complete-lazy"), "style"],
  ["complete-compile", () => fixtureManifest("complete-compile"), "style"],
  ["complete-lazy with shell metacharacters in its values", hostile, "warning"],
];

describe("shellcheck", () => {
  for (const [name, manifest, severity] of cases) {
    it.skipIf(!available)(`passes every generated script of ${name}${why}`, async () => {
      const dir = await mkdtemp(join(tmpdir(), "bringup-shellcheck-"));
      try {
        const scripts = generateRecipe(await manifest()).filter((file) => file.path.endsWith(".sh"));
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
