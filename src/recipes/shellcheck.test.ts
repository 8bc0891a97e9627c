import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fixtureManifest } from "./fixtures/index.js";
import { generateRecipe, type RecipeFile } from "./generate.js";
import { type PackagePin, PLATFORM, type Platform } from "./platform.js";

const available = spawnSync("shellcheck", ["--version"]).status === 0;
const why = available
  ? ""
  : " [SKIPPED: shellcheck is not on PATH; apt-get install -y shellcheck, as .ci/run does]";

/** Platform pins with metacharacters, as a library caller might pass them. */
function hostile(): Platform {
  const platform = structuredClone(PLATFORM);
  for (const pkg of platform.packages) pkg.value = "1'$(x)`y`;|&";
  platform.packages.push({ ...PLATFORM.packages[0], name: "a'b", role: '"$c"', value: '"$c"' } as PackagePin);
  return platform;
}

// With hostile values shellcheck's notes and warnings say that quotes, backslashes and $(...) stay
// literal (SC2016, SC2089), which is the point; the script must still parse with no error.
const cases: [string, () => Promise<RecipeFile[]>, string][] = [
  ["complete-lazy", async () => generateRecipe(await fixtureManifest("complete-lazy")), "style"],
  ["complete-compile", async () => generateRecipe(await fixtureManifest("complete-compile")), "style"],
  [
    "blocks-lazy (not served by vLLM)",
    async () => generateRecipe(await fixtureManifest("blocks-lazy")),
    "style",
  ],
  [
    "complete-lazy with shell metacharacters in the pins",
    async () => generateRecipe(await fixtureManifest("complete-lazy"), hostile()),
    "error",
  ],
  [
    "blocks-lazy with shell metacharacters in why it is not served",
    async () => {
      const manifest = await fixtureManifest("blocks-lazy");
      if (manifest.reference?.device_blocks === undefined)
        throw new Error("blocks-lazy lost its device_blocks");
      manifest.reference.device_blocks.not_served = 'it\'s $(x) `y`; | & "$c" \\ %s\n# not a comment';
      return generateRecipe(manifest);
    },
    "error",
  ],
];

describe("shellcheck", () => {
  for (const [name, manifest, severity] of cases) {
    it.skipIf(!available)(`passes every generated script of ${name}${why}`, async () => {
      const dir = await mkdtemp(join(tmpdir(), "bringup-shellcheck-"));
      try {
        const scripts = (await manifest()).filter((file) => file.path.endsWith(".sh"));
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
