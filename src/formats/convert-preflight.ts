import { readdir, stat, statfs } from "node:fs/promises";
import { dirname, join } from "node:path";
import { exists, writeDirectoryAtomic } from "../common/atomic-write.js";
import { BringupError } from "../common/errors.js";
import type { Checkpoint } from "./checkpoint.js";
import { rowRanges } from "./convert-jobs.js";
import { dtypeBytes, elementCount } from "./dtypes.js";
import { type LogicalTensor, logicalRows, readMxfp4Codes } from "./logical.js";
import { checkMxfp4Scales, MXFP4_BLOCK } from "./mxfp4.js";
import { EXACT_SCALE_SPAN, mxfp4ToFp8Tile128, TILE } from "./mxfp4-to-fp8.js";
import { outputError } from "./output-errors.js";
import { safetensorsHeaderBytes, type TensorLayout } from "./safetensors-header.js";

/** Scale bytes the preflight reads at a time. */
const SCALE_CHUNK = 16 * 2 ** 20;

/** writeDirectoryAtomic, with a full disk or a read-only destination said as such. */
export async function writeOutput(output: string, fill: (dir: string) => Promise<void>): Promise<void> {
  try {
    await writeDirectoryAtomic(output, fill);
  } catch (error) {
    throw outputError(error, output);
  }
}

/** Refuses, before anything is written, an output larger than the free space where it goes. */
export async function checkFreeSpace(
  source: string,
  output: string,
  shards: readonly {
    layouts: readonly TensorLayout[];
    metadata: Readonly<Record<string, string>>;
  }[],
): Promise<void> {
  let needed = 0;
  for (const { layouts, metadata } of shards) {
    needed += 8 + safetensorsHeaderBytes(layouts, metadata);
    for (const t of layouts) needed += elementCount(t.shape) * dtypeBytes(t.dtype);
  }
  if ((await stat(source)).isDirectory()) {
    for (const name of await readdir(source)) {
      const info = await stat(join(source, name));
      if (info.isFile() && !name.endsWith(".safetensors")) needed += info.size;
    }
  }
  let where = dirname(output);
  while (!(await exists(where)) && dirname(where) !== where) where = dirname(where);
  const fs = await statfs(where);
  const free = fs.bavail * fs.bsize;
  // A file system that reports no size at all (sysfs, some network mounts) cannot be checked.
  if (fs.blocks > 0 && needed > free) {
    const gib = (n: number) => `${(n / 2 ** 30).toFixed(2)} GiB`;
    throw new BringupError(
      "OUTPUT_NO_SPACE",
      `${output}: the output needs ${gib(needed)} (${needed} bytes) but ${where} has ${gib(free)} free; free some space or write elsewhere. Nothing was written.`,
      { subject: output },
    );
  }
}

/**
 * The MXFP4 weights with 128x128 tiles that cannot be FP8 exactly, found before anything is written
 * so they can be refused. Reads only scales: a tile whose block scales span at most EXACT_SCALE_SPAN binades is exact
 * whatever its elements, and only the rare band with a wider tile has its blocks read and checked.
 * NaN scales are refused here too.
 */
export async function findInexactTiles(
  ck: Checkpoint,
  plans: readonly { tensor: LogicalTensor; op: { op: string; block?: string } }[],
  signal?: AbortSignal,
): Promise<{ name: string; tiles: number; span: number }[]> {
  const found: { name: string; tiles: number; span: number }[] = [];
  for (const { tensor, op } of plans) {
    if (op.op !== "mxfp4-to-fp8" || op.block !== "tile128" || tensor.kind !== "mxfp4") continue;
    let tiles = 0;
    let span = 0;
    const { rows, cols } = logicalRows(tensor);
    const groups = cols / MXFP4_BLOCK;
    const matrixRows = tensor.shape.at(-2) as number;
    const subject = `${ck.tensor(tensor.parts[0]).file}#${tensor.name}`;
    for (const [start, end] of rowRanges(tensor, true, groups, SCALE_CHUNK, 0, rows)) {
      if (signal?.aborted === true) return found;
      const scales = await ck.readTensorRange(tensor.parts[1], start * groups, end * groups);
      checkMxfp4Scales(scales, subject, start * groups);
      for (let r = start; r < end; ) {
        const matrixStart = Math.floor(r / matrixRows) * matrixRows;
        const bandEnd = Math.min(end, matrixStart + (Math.floor((r - matrixStart) / TILE) + 1) * TILE);
        if (
          widestTileSpan(scales.subarray((r - start) * groups, (bandEnd - start) * groups), groups) >
          EXACT_SCALE_SPAN
        ) {
          const [g0, g1] = [r * groups, bandEnd * groups];
          const blocks = await readMxfp4Codes(ck, tensor, g0, g1);
          const report = mxfp4ToFp8Tile128(
            blocks,
            scales.subarray(g0 - start * groups, g1 - start * groups),
            bandEnd - r,
            cols,
            false,
            subject,
            r - matrixStart,
          );
          tiles += report.inexactTiles.length;
          span = Math.max(span, ...report.inexactTiles.map((t) => t.blockExponentSpan));
        }
        r = bandEnd;
      }
    }
    if (tiles > 0) found.push({ name: tensor.name, tiles, span });
  }
  return found;
}

/** The widest span of scale exponents within one 128-column tile of a band of rows. */
function widestTileSpan(scales: Uint8Array, groups: number): number {
  const perTile = TILE / MXFP4_BLOCK;
  let widest = 0;
  for (let g0 = 0; g0 < groups; g0 += perTile) {
    let low = 255;
    let high = 0;
    for (let at = 0; at < scales.length; at += groups) {
      for (let g = g0; g < Math.min(groups, g0 + perTile); g += 1) {
        const k = scales[at + g] as number;
        if (k < low) low = k;
        if (k > high) high = k;
      }
    }
    widest = Math.max(widest, high - low);
  }
  return widest;
}
