/**
 * The integer MXFP4 kernel's input quantizers for bench/kernel-before-after.ts's two arms: the
 * working tree's mxfp4-int8.ts, and the one a git revision has (its kernel reads the layout its own
 * quantizer writes), imported from a copy in a temporary directory beside the module it imports
 * (the halves order, where the revision has it).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { quantizedBytes, quantizeInput } from "../src/engine/kernels/matmul/mxfp4-int8.js";

/** An arm's input quantizer (mxfp4-int8.ts's; an older one returned its scales' offset). */
type Quantize = (x: Float32Array, M: number, K: number, buffer: ArrayBufferLike, at: number) => unknown;
export interface Quantizer {
  readonly quantizeInput: Quantize;
  readonly quantizedBytes: typeof quantizedBytes;
}

/** The quantizers of `revision` (before) and of the working tree (after), in the checkout at `root`. */
export async function int8Quantizers(
  root: string,
  revision: string,
): Promise<{ before: Quantizer; after: Quantizer }> {
  const sources = ["src/engine/kernels/matmul/mxfp4-int8.ts", "src/formats/mxfp4-halves.ts"];
  const dir = mkdtempSync(join(tmpdir(), "int8-before-"));
  try {
    for (const source of sources) {
      const at = `${revision}:${source}`;
      if (spawnSync("git", ["cat-file", "-e", at], { cwd: root }).status !== 0) continue;
      mkdirSync(dirname(join(dir, source)), { recursive: true });
      writeFileSync(join(dir, source), execFileSync("git", ["show", at], { cwd: root, encoding: "utf8" }));
    }
    return {
      before: (await import(pathToFileURL(join(dir, sources[0] as string)).href)) as Quantizer,
      after: { quantizeInput, quantizedBytes },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
