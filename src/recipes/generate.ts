import { chmod, readFile } from "node:fs/promises";
import { join } from "node:path";
import { writeFileAtomic } from "../common/atomic-write.js";
import type { Problem } from "../records/index.js";
import { renderDockerfile } from "./dockerfile.js";
import { renderInstallScript } from "./install-script.js";
import { resolveRecipe } from "./pins.js";
import { PLATFORM, type Platform } from "./platform.js";
import { renderRunGatesScript } from "./run-gates-script.js";
import type { RecipeManifest } from "./source.js";

/** One generated file, its path relative to the port directory. */
export interface RecipeFile {
  path: string;
  content: string;
  executable: boolean;
}

/** The files a recipe consists of, relative to `ports/<id>/`; they are generated and checked as a set. */
export const RECIPE_PATHS = ["recipe/Dockerfile", "recipe/install.sh", "tests/hpu/run_gates.sh"] as const;

/** The recipe of a port; the same manifest and platform pins always give the same bytes. */
export function generateRecipe(manifest: RecipeManifest, platform: Platform = PLATFORM): RecipeFile[] {
  const recipe = resolveRecipe(manifest, platform);
  return [
    { path: "recipe/Dockerfile", content: renderDockerfile(recipe), executable: false },
    { path: "recipe/install.sh", content: renderInstallScript(recipe), executable: true },
    { path: "tests/hpu/run_gates.sh", content: renderRunGatesScript(recipe), executable: true },
  ];
}

/**
 * Writes the recipe into `portDir`. Everything is generated before anything is written, so a
 * refusal leaves the port untouched, and each file is replaced whole.
 */
export async function writeRecipe(
  portDir: string,
  manifest: RecipeManifest,
  platform: Platform = PLATFORM,
): Promise<string[]> {
  const files = generateRecipe(manifest, platform);
  for (const file of files) {
    const path = join(portDir, file.path);
    await writeFileAtomic(path, file.content);
    if (file.executable) await chmod(path, 0o755);
  }
  return files.map((file) => file.path);
}

/**
 * The linter's view of a port's recipe. A port with engine model code (a reference section) has
 * one, equal to what its manifest and the platform pins generate; a port without has none. Each
 * file that is missing, out of date, or present where no recipe can be is a problem. `label` names
 * the port directory in the problems (e.g. `ports/<id>`).
 */
export async function recipeProblems(
  portDir: string,
  label: string,
  manifest: RecipeManifest,
  platform: Platform = PLATFORM,
): Promise<Problem[]> {
  const present = new Map<string, string>();
  for (const path of RECIPE_PATHS) {
    const text = await readIfPresent(join(portDir, path));
    if (text !== undefined) present.set(path, text);
  }
  const regenerate = `\`bringup recipe ${manifest.id}\``;
  if (manifest.reference === undefined) {
    return [...present.keys()].map((path) => ({
      file: `${label}/${path}`,
      message:
        "is checked in, but the port has no engine model code, so there is no device plugin to install",
      expected: "no recipe files until the port runs on the engine",
    }));
  }
  let files: RecipeFile[];
  try {
    files = generateRecipe(manifest, platform);
  } catch (error) {
    return [
      {
        file: `${label}/port.yaml`,
        message: `cannot generate the recipe: ${(error as Error).message}`,
        expected: `a manifest ${regenerate} accepts`,
      },
    ];
  }
  const problems: Problem[] = [];
  for (const file of files) {
    const text = present.get(file.path);
    if (text === undefined) {
      problems.push({
        file: `${label}/${file.path}`,
        message: "is missing; a port with engine model code has a recipe, generated as a whole",
        expected: `the output of ${regenerate}`,
      });
    } else if (text !== file.content) {
      problems.push({
        file: `${label}/${file.path}`,
        message: `is out of date with port.yaml and src/recipes/platform.ts${firstDifference(text, file.content)}`,
        expected: `the output of ${regenerate}`,
      });
    }
  }
  return problems;
}

function firstDifference(actual: string, expected: string): string {
  const a = actual.split("\n");
  const b = expected.split("\n");
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) return ` (first difference at line ${i + 1})`;
  }
  return "";
}

async function readIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR" || code === "EISDIR") return undefined;
    throw error;
  }
}
