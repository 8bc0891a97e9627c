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

// With hostile values shellcheck's notes and warnings say that quotes, backslashes and $(...) stay
// literal (SC2016, SC2089), which is the point; the script must still parse with no error.
const cases: [string, () => ReturnType<typeof fixtureManifest>, string][] = [
  ["complete-lazy", () => fixtureManifest("complete-lazy"), "style"],
  ["complete-compile", () => fixtureManifest("complete-compile"), "style"],
  ["complete-lazy with shell metacharacters in its values", hostile, "error"],
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
        // POSIX sh; at style level for the fixtures, so they are clean and not merely safe.
        const result = spawnSync("shellcheck", ["--shell=sh", `--severity=${severity}`, ...paths], {
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
