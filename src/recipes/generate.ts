import { chmod, readFile } from "node:fs/promises";
import { join } from "node:path";
import { writeFileAtomic } from "../common/atomic-write.js";
import type { Problem } from "../records/index.js";
import { renderDockerfile } from "./dockerfile.js";
import { renderInstallScript } from "./install-script.js";
import { describeMissingPins, missingPins, resolveRecipe } from "./pins.js";
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

/** The recipe of a manifest with complete pins; the same manifest always gives the same bytes. */
export function generateRecipe(manifest: RecipeManifest): RecipeFile[] {
  const recipe = resolveRecipe(manifest);
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
export async function writeRecipe(portDir: string, manifest: RecipeManifest): Promise<string[]> {
  const files = generateRecipe(manifest);
  for (const file of files) {
    const path = join(portDir, file.path);
    await writeFileAtomic(path, file.content);
    if (file.executable) await chmod(path, 0o755);
  }
  return files.map((file) => file.path);
}

/**
 * The linter's view of a port's recipe: nothing when the port has none yet; otherwise each file
 * that is missing, out of date with the manifest, or present although the manifest's pins are
 * incomplete. `label` names the port directory in the problems (e.g. `ports/<id>`).
 */
export async function recipeProblems(
  portDir: string,
  label: string,
  manifest: RecipeManifest,
): Promise<Problem[]> {
  const present = new Map<string, string>();
  for (const path of RECIPE_PATHS) {
    const text = await readIfPresent(join(portDir, path));
    if (text !== undefined) present.set(path, text);
  }
  if (present.size === 0) return [];
  const regenerate = `\`bringup recipe ${manifest.id}\``;
  const missing = missingPins(manifest);
  if (missing.length > 0) {
    return [...present.keys()].map((path) => ({
      file: `${label}/${path}`,
      message: `is checked in, but port.yaml lacks pins a recipe needs:\n${describeMissingPins(missing)}`,
      expected: `complete pins in port.yaml and then ${regenerate}, or no recipe files`,
    }));
  }
  let files: RecipeFile[];
  try {
    files = generateRecipe(manifest);
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
        message: "is missing; the recipe's files are generated together",
        expected: `the output of ${regenerate}`,
      });
    } else if (text !== file.content) {
      problems.push({
        file: `${label}/${file.path}`,
        message: `is out of date with port.yaml${firstDifference(text, file.content)}`,
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
