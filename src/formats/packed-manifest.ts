import { stat } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { BringupError, isBringupError } from "../common/errors.js";
import { MAX_INDEX_BYTES, readBoundedText } from "./bounded-file.js";
import { DTYPE_BYTES, type Dtype, elementCount, STORED_DTYPES } from "./dtypes.js";

/**
 * The packed load format: a checkpoint laid out as the reference engine holds it in memory, one
 * file per tensor-parallel rank, each tensor's share of the bytes at an offset aligned for direct
 * reads, named with its source and a CRC-32 in `packed.json`.
 *
 * The split rule (the one the engine's memory layout allows without a copy): a tensor of two or
 * more dimensions is split along its first dimension into `ranks` equal parts, so each rank holds
 * a contiguous byte range of the row-major tensor (output rows of a projection, vocabulary rows of
 * an embedding or lm_head, experts of a stacked expert tensor with its MXFP4 blocks and scales); a
 * tensor of one dimension or none (norms, biases, sinks) is replicated on every rank. Every
 * projection is thus column-parallel, which vLLM would all-gather after; the engine, on one
 * device, reads every rank's range into one whole tensor.
 */
export const PACKED_MANIFEST = "packed.json";
export const PACKED_FORMAT = "bringup.packed/1";
/** Offsets of every shard in a rank file are multiples of this: a page, as O_DIRECT reads need. */
export const PACKED_ALIGNMENT = 4096;

export function rankFileName(rank: number, ranks: number): string {
  return `rank-${String(rank).padStart(3, "0")}-of-${String(ranks).padStart(3, "0")}.bin`;
}

const natural = z.number().int().nonnegative();

const ShardSchema = z.strictObject({
  offset: natural,
  bytes: natural,
  crc32: z.number().int().min(0).max(0xffff_ffff),
});

const TensorSchema = z.strictObject({
  name: z.string().min(1),
  dtype: z.enum(STORED_DTYPES),
  shape: z.array(natural),
  /** The tensor in the source checkpoint: its shard file's name and tensor name (the same bytes). */
  source: z.strictObject({ file: z.string(), tensor: z.string() }),
  /** "rows": split along the first dimension; "replicated": the whole tensor on every rank. */
  split: z.enum(["rows", "replicated"]),
  /** One entry per rank, in rank order. */
  shards: z.array(ShardSchema).min(1),
});

const ManifestSchema = z.strictObject({
  format: z.literal(PACKED_FORMAT),
  ranks: z.number().int().positive(),
  alignment: z.literal(PACKED_ALIGNMENT),
  files: z.array(z.strictObject({ path: z.string(), bytes: natural })).min(1),
  tensors: z.array(TensorSchema),
});

export type PackedManifest = z.infer<typeof ManifestSchema>;
export type PackedTensor = z.infer<typeof TensorSchema>;
export type PackedShard = z.infer<typeof ShardSchema>;

/** A packed directory whose manifest and rank files agree: every shard lies inside its file. */
export interface PackedCheckpoint {
  readonly dir: string;
  readonly manifestPath: string;
  readonly manifest: PackedManifest;
  /** The absolute path of each rank's file, in rank order. */
  readonly rankPaths: readonly string[];
}

/** Whether `dir` holds a packed checkpoint (its manifest). */
export async function isPackedDirectory(dir: string): Promise<boolean> {
  return stat(join(dir, PACKED_MANIFEST)).then(
    (s) => s.isFile(),
    () => false,
  );
}

function invalid(path: string, what: string, subject = path): BringupError {
  return new BringupError(
    "PACKED_MANIFEST_INVALID",
    `${path}: ${what}; pack the checkpoint again with \`bringup weights pack\`.`,
    { subject },
  );
}

/**
 * Reads and checks `dir`/packed.json against the rank files: each tensor's shape, dtype and split
 * give exactly its shards' sizes, shards sit at aligned offsets inside their file, and each rank
 * file has the size the manifest states (PACKED_FILE_TRUNCATED names the file and the first tensor
 * past its end). Nothing is read but the manifest and the files' sizes.
 */
export async function openPacked(dir: string): Promise<PackedCheckpoint> {
  const manifestPath = join(dir, PACKED_MANIFEST);
  let manifest: PackedManifest;
  try {
    manifest = ManifestSchema.parse(JSON.parse(await readBoundedText(manifestPath, MAX_INDEX_BYTES)));
  } catch (error) {
    if (isBringupError(error)) throw error;
    const issue = error instanceof z.ZodError ? error.issues[0] : undefined;
    const where = issue === undefined ? "" : ` at ${issue.path.join(".") || "the top level"}`;
    throw invalid(
      manifestPath,
      `not a packed manifest${where} (${issue?.message ?? (error as Error).message.split("\n")[0]})`,
    );
  }
  const { ranks, files, tensors } = manifest;
  if (files.length !== ranks) throw invalid(manifestPath, `lists ${files.length} files for ${ranks} ranks`);
  files.forEach((f, r) => {
    if (f.path !== rankFileName(r, ranks))
      throw invalid(manifestPath, `file ${r} is ${JSON.stringify(f.path)}, not ${rankFileName(r, ranks)}`);
  });
  const seen = new Set<string>();
  for (const t of tensors) {
    if (seen.has(t.name)) throw invalid(manifestPath, `tensor ${t.name} is listed twice`, t.name);
    seen.add(t.name);
    const want = shardBytes(t.dtype, t.shape, t.split, ranks);
    if (want === undefined)
      throw invalid(
        manifestPath,
        `tensor ${t.name} of shape [${t.shape}] cannot be split ${t.split}`,
        t.name,
      );
    if (t.shards.length !== ranks)
      throw invalid(
        manifestPath,
        `tensor ${t.name} has ${t.shards.length} shards for ${ranks} ranks`,
        t.name,
      );
    t.shards.forEach((s, r) => {
      if (s.bytes !== want || s.offset % PACKED_ALIGNMENT !== 0)
        throw invalid(
          manifestPath,
          `tensor ${t.name}'s shard on rank ${r} is ${s.bytes} bytes at offset ${s.offset}, not ${want} bytes at a multiple of ${PACKED_ALIGNMENT}`,
          t.name,
        );
      if (s.offset + s.bytes > (files[r]?.bytes ?? 0))
        throw invalid(
          manifestPath,
          `tensor ${t.name}'s shard on rank ${r} ends past ${files[r]?.path}`,
          t.name,
        );
    });
  }
  const rankPaths = files.map((f) => join(dir, f.path));
  await Promise.all(
    rankPaths.map(async (path, r) => {
      const size = await stat(path).then(
        (s) => s.size,
        (cause: unknown) => {
          throw new BringupError(
            "PACKED_FILE_MISSING",
            `${path}: missing, yet ${PACKED_MANIFEST} lists it as rank ${r}'s file; copy the whole packed directory again.`,
            { subject: path, cause },
          );
        },
      );
      const expected = files[r]?.bytes ?? 0;
      if (size !== expected) {
        const past = tensors.find((t) => (t.shards[r]?.offset ?? 0) + (t.shards[r]?.bytes ?? 0) > size);
        throw new BringupError(
          "PACKED_FILE_TRUNCATED",
          `${path}: ${size} bytes where ${PACKED_MANIFEST} says ${expected}${past === undefined ? "" : `, so tensor ${past.name} is cut off`}; the file is ${size < expected ? "truncated" : "not the one packed"}, copy or pack it again.`,
          { subject: path },
        );
      }
    }),
  );
  return { dir, manifestPath, manifest, rankPaths };
}

/** The bytes of one rank's share of a tensor under `split`, or undefined when it does not divide. */
export function shardBytes(
  dtype: Dtype,
  shape: readonly number[],
  split: "rows" | "replicated",
  ranks: number,
): number | undefined {
  const bytes = elementCount(shape) * DTYPE_BYTES[dtype];
  if (split === "replicated") return shape.length < 2 ? bytes : undefined;
  return shape.length >= 2 && (shape[0] as number) % ranks === 0 ? bytes / ranks : undefined;
}
