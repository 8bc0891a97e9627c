import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

/**
 * Where a worker starts: the compiled worker.js beside this file, or, when this file runs as its
 * TypeScript source (tests, tsx), worker.ts bundled once per process with esbuild (which those
 * runners bring), as Node 20 cannot load TypeScript in a worker by itself.
 */
let sourceBundle: string | undefined;
export function workerEntry(): { filename: string | URL; eval: boolean } {
  if (!import.meta.url.endsWith(".ts"))
    return { filename: new URL("./worker.js", import.meta.url), eval: false };
  if (sourceBundle === undefined) {
    const esbuild = createRequire(import.meta.url)("esbuild") as {
      buildSync(options: object): { outputFiles: { text: string }[] };
    };
    sourceBundle = esbuild.buildSync({
      entryPoints: [fileURLToPath(new URL("./worker.ts", import.meta.url))],
      bundle: true,
      format: "cjs",
      platform: "node",
      target: "node20",
      write: false,
      logLevel: "error",
    }).outputFiles[0]?.text;
  }
  return { filename: sourceBundle as string, eval: true };
}
