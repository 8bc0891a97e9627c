import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";

/** The checkout this CLI was built from: dist/src/cli/root.js (or src/cli/root.ts in tests) sits three or two levels down. */
function packageRoot(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const up = here.includes(`${join("dist", "src")}`) ? "../../.." : "../..";
  return resolve(here, up);
}

/** The project root: --root, then $BRINGUP_ROOT, then the package itself. */
export function projectRoot(command: Command): string {
  const fromFlag = command.optsWithGlobals().root as string | undefined;
  return resolve(fromFlag ?? process.env.BRINGUP_ROOT ?? packageRoot());
}
