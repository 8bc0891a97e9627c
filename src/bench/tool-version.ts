import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

let cached: string | undefined;

/** "bringup <version>" from the package this file ships in (src/ in tests, dist/src/ when built). */
export function toolVersion(): string {
  if (cached !== undefined) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 5; depth++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === "bringup" && pkg.version) {
        cached = `bringup ${pkg.version}`;
        return cached;
      }
    } catch {
      // no package.json at this level; keep walking up
    }
    dir = dirname(dir);
  }
  cached = "bringup (unknown version)";
  return cached;
}
