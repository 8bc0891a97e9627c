import { closeSync, ftruncateSync, openSync } from "node:fs";
import { basename, join } from "node:path";
import { crc32 } from "node:zlib";
import { writeDirectoryAtomic, writeFileAtomic } from "../common/atomic-write.js";
import { BringupError } from "../common/errors.js";
import { openCheckpoint } from "./checkpoint.js";
import { copyCompanions } from "./companions.js";
import { type Dtype, STORED_DTYPES, type StoredDtype } from "./dtypes.js";
import { outputError } from "./output-errors.js";
import {
  PACKED_ALIGNMENT,
  PACKED_FORMAT,
  PACKED_MANIFEST,
  type PackedManifest,
  type PackedTensor,
  rankFileName,
  shardBytes,
} from "./packed-manifest.js";
import { writeAtSync } from "./safetensors-writer.js";

export interface PackReport {
  readonly source: string;
  readonly output: string;
  readonly ranks: number;
  readonly tensors: number;
  /** Bytes of each rank's file. */
  readonly rankBytes: readonly number[];
}

/** Bytes copied at a time: a large tensor streams through one buffer. */
const CHUNK_BYTES = 64 * 2 ** 20;

const align = (n: number) => Math.ceil(n / PACKED_ALIGNMENT) * PACKED_ALIGNMENT;

/**
 * Writes checkpoint `source` (safetensors, sharded or not) as a packed directory `output` for
 * `ranks` ranks (see packed-manifest.ts for the split rule), with the files beside the weights
 * (config.json, tokenizer) copied. The directory appears only when complete. Refused before
 * anything is written: a tensor in a dtype the engine does not keep (PACKED_DTYPE) and a tensor
 * whose first dimension `ranks` does not divide (PACKED_RANKS_INDIVISIBLE).
 */
export async function packCheckpoint(source: string, output: string, ranks: number): Promise<PackReport> {
  if (!Number.isInteger(ranks) || ranks < 1 || ranks > 1024) {
    throw new BringupError("BAD_ARGUMENT", `--ranks ${ranks}: give a whole number from 1 to 1024.`, {
      subject: "--ranks",
    });
  }
  const ck = await openCheckpoint(source);
  try {
    const ends = new Array<number>(ranks).fill(0);
    const tensors: PackedTensor[] = ck.tensors.map((t) => {
      if (!(STORED_DTYPES as readonly string[]).includes(t.dtype)) {
        throw new BringupError(
          "PACKED_DTYPE",
          `${t.file}: tensor ${t.name} is ${t.dtype}; the engine keeps only ${STORED_DTYPES.join(", ")} in memory, so it cannot be packed (convert it first).`,
          { subject: t.name },
        );
      }
      const split = t.shape.length >= 2 ? "rows" : "replicated";
      const bytes = shardBytes(t.dtype as Dtype, t.shape, split, ranks);
      if (bytes === undefined) {
        throw new BringupError(
          "PACKED_RANKS_INDIVISIBLE",
          `${t.file}: tensor ${t.name} has ${t.shape[0]} rows (dimension 0 of [${t.shape.join(", ")}]), which ${ranks} ranks do not divide; choose a --ranks that divides every split dimension.`,
          { subject: t.name },
        );
      }
      const shards = ends.map((end, r) => {
        ends[r] = align(end) + bytes;
        return { offset: align(end), bytes, crc32: 0 };
      });
      return {
        name: t.name,
        dtype: t.dtype as StoredDtype,
        shape: [...t.shape],
        source: { file: basename(t.file), tensor: t.name },
        split,
        shards,
      };
    });
    const manifest: PackedManifest = {
      format: PACKED_FORMAT,
      ranks,
      alignment: PACKED_ALIGNMENT,
      files: ends.map((end, r) => ({ path: rankFileName(r, ranks), bytes: align(end) })),
      tensors,
    };
    await writeDirectoryAtomic(output, async (dir) => {
      await copyCompanions(source, dir);
      const buffer = new Uint8Array(
        Math.min(CHUNK_BYTES, Math.max(1, ...tensors.map((t) => t.shards[0]?.bytes ?? 0))),
      );
      for (let r = 0; r < ranks; r++) {
        const path = join(dir, rankFileName(r, ranks));
        let fd: number;
        try {
          fd = openSync(path, "w");
        } catch (error) {
          throw outputError(error, path);
        }
        try {
          for (const t of tensors) {
            const shard = t.shards[r] as PackedTensor["shards"][number];
            const start = t.split === "rows" ? r * shard.bytes : 0;
            let crc = 0;
            for (let at = 0; at < shard.bytes; at += buffer.length) {
              const end = Math.min(shard.bytes, at + buffer.length);
              const piece = await ck.readTensorRange(t.name, start + at, start + end, buffer);
              crc = crc32(piece, crc);
              writeAtSync(fd, piece, shard.offset + at, path);
            }
            (shard as { crc32: number }).crc32 = crc;
          }
          // The last shard's padding: the file has the length the manifest states.
          ftruncateSync(fd, manifest.files[r]?.bytes ?? 0);
        } finally {
          closeSync(fd);
        }
      }
      await writeFileAtomic(join(dir, PACKED_MANIFEST), `${JSON.stringify(manifest)}\n`);
    });
    return {
      source,
      output,
      ranks,
      tensors: tensors.length,
      rankBytes: manifest.files.map((f) => f.bytes),
    };
  } finally {
    await ck.close();
  }
}
