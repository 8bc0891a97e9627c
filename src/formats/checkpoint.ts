import { readdir, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import { writeFileAtomic } from "../common/atomic-write.js";
import { BringupError } from "../common/errors.js";
import { checkpointBudget, type StoredTensor } from "./safetensors-header.js";
import { type OpenOptions, openSafetensors, type SafetensorsFile } from "./safetensors-reader.js";
import { type TensorData, writeSafetensors } from "./safetensors-writer.js";
import { readShardIndex } from "./shard-index.js";

export const INDEX_FILE = "model.safetensors.index.json";

/** A tensor of a checkpoint, its `file` the shard holding it. */
export type CheckpointTensor = StoredTensor;

/**
 * A checkpoint: one safetensors file, or a directory of shards named by
 * `model.safetensors.index.json` (or, without an index, every `*.safetensors` in it).
 */
export class Checkpoint {
  readonly #byName: Map<string, CheckpointTensor>;
  readonly #byFile: Map<string, SafetensorsFile>;

  constructor(
    readonly path: string,
    readonly shards: readonly SafetensorsFile[],
    /** Tensors in shard order, then data order. */
    readonly tensors: readonly CheckpointTensor[],
    readonly metadata: Readonly<Record<string, string>>,
    /** Whether the tensors were listed by an index file. */
    readonly indexed: boolean,
  ) {
    this.#byFile = new Map(shards.map((s) => [s.path, s]));
    this.#byName = new Map(tensors.map((t) => [t.name, t]));
  }

  has(name: string): boolean {
    return this.#byName.has(name);
  }

  /** The tensor named `name`, or undefined. */
  find(name: string): CheckpointTensor | undefined {
    return this.#byName.get(name);
  }

  tensor(name: string): CheckpointTensor {
    const info = this.#byName.get(name);
    if (info === undefined) {
      throw new BringupError("TENSOR_NOT_FOUND", `${this.path}: no tensor named ${JSON.stringify(name)}.`, {
        subject: `${this.path}#${name}`,
      });
    }
    return info;
  }

  readTensor(name: string): Promise<Uint8Array> {
    return this.readTensorRange(name, 0, this.tensor(name).byteLength);
  }

  readTensorRange(name: string, start: number, end: number, into?: Uint8Array): Promise<Uint8Array> {
    const info = this.tensor(name);
    return (this.#byFile.get(info.file) as SafetensorsFile).readRange(info, start, end, into);
  }

  /** Total bytes of tensor data. */
  get byteLength(): number {
    return this.tensors.reduce((sum, t) => sum + t.byteLength, 0);
  }

  async close(): Promise<void> {
    await Promise.all(this.shards.map((s) => s.close()));
  }
}

async function openAll(paths: string[], options: OpenOptions): Promise<SafetensorsFile[]> {
  const opened: SafetensorsFile[] = [];
  try {
    for (const path of paths) opened.push(await openSafetensors(path, options));
  } catch (error) {
    await Promise.all(opened.map((f) => f.close()));
    throw error;
  }
  return opened;
}

/**
 * Opens a safetensors file or a checkpoint directory (sharded or not); the caller closes it. Its
 * shards together list at most MAX_TENSORS tensors, so a crafted header is refused in bounded time
 * and memory.
 */
export async function openCheckpoint(path: string, given: OpenOptions = {}): Promise<Checkpoint> {
  const options = { ...given, budget: checkpointBudget() };
  const info = await stat(path).catch((error: unknown) => {
    throw new BringupError("FILE_NOT_FOUND", `${path}: no such file or directory.`, {
      subject: path,
      cause: error,
    });
  });
  if (info.isFile()) {
    const [file] = await openAll([path], options);
    const shard = file as SafetensorsFile;
    return new Checkpoint(path, [shard], shard.tensors, shard.metadata, false);
  }
  const names = await readdir(path);
  if (names.includes(INDEX_FILE)) return openIndexed(path, options);
  const files = names.filter((n) => n.endsWith(".safetensors")).sort();
  if (files.length === 0) {
    throw new BringupError(
      "NO_WEIGHTS",
      `${path}: no *.safetensors files and no ${INDEX_FILE}; point at a checkpoint directory.`,
      {
        subject: path,
      },
    );
  }
  const shards = await openAll(
    files.map((n) => join(path, n)),
    options,
  );
  const tensors: CheckpointTensor[] = [];
  const seen = new Map<string, string>();
  for (const shard of shards) {
    for (const t of shard.tensors) {
      const other = seen.get(t.name);
      if (other !== undefined) {
        await Promise.all(shards.map((s) => s.close()));
        throw new BringupError(
          "DUPLICATE_TENSOR",
          `${path}: tensor ${JSON.stringify(t.name)} is in both ${basename(other)} and ${basename(shard.path)}; add an index or remove one.`,
          { subject: `${shard.path}#${t.name}` },
        );
      }
      seen.set(t.name, shard.path);
      tensors.push(t);
    }
  }
  return new Checkpoint(
    path,
    shards,
    tensors,
    shards.length === 1 ? (shards[0] as SafetensorsFile).metadata : {},
    false,
  );
}

async function openIndexed(dir: string, options: OpenOptions): Promise<Checkpoint> {
  const indexPath = join(dir, INDEX_FILE);
  const index = await readShardIndex(indexPath);
  const shardNames = [...new Set(index.weightMap.values())].sort();
  for (const shard of shardNames) {
    if (shard.includes("/") || shard.includes("\\") || shard === "..") {
      throw new BringupError(
        "BAD_INDEX",
        `${indexPath}: shard name ${JSON.stringify(shard)} must be a file in the same directory.`,
        {
          subject: indexPath,
        },
      );
    }
    const present = await stat(join(dir, shard)).then(
      (s) => s.isFile(),
      () => false,
    );
    if (!present) {
      const example = [...index.weightMap].find(([, file]) => file === shard)?.[0];
      throw new BringupError(
        "SHARD_MISSING",
        `${join(dir, shard)}: missing, yet ${INDEX_FILE} puts tensor ${JSON.stringify(example)} there; download the shard again.`,
        { subject: join(dir, shard) },
      );
    }
  }
  const shards = await openAll(
    shardNames.map((n) => join(dir, n)),
    options,
  );
  const tensors: CheckpointTensor[] = [];
  for (const shard of shards) {
    for (const t of shard.tensors) {
      const listed = index.weightMap.get(t.name);
      if (listed !== basename(shard.path)) {
        await Promise.all(shards.map((s) => s.close()));
        throw new BringupError(
          "INDEX_DISAGREES",
          `${shard.path}: holds tensor ${JSON.stringify(t.name)}, but ${INDEX_FILE} ${listed === undefined ? "does not list it" : `puts it in ${listed}`}; the index and the shards must agree, so download the checkpoint again or fix the index.`,
          { subject: `${shard.path}#${t.name}` },
        );
      }
      tensors.push(t);
    }
  }
  const ck = new Checkpoint(dir, shards, tensors, index.metadata, true);
  // Each tensor found is listed, in its shard, under its own name: the index lists no more only if
  // it lists as many.
  if (tensors.length < index.weightMap.size) {
    const [name, file] = [...index.weightMap].find(([name]) => !ck.has(name)) as [string, string];
    await ck.close();
    throw new BringupError(
      "TENSOR_MISSING",
      `${join(dir, file)}: ${INDEX_FILE} says tensor ${JSON.stringify(name)} is here, but it is not.`,
      { subject: `${join(dir, file)}#${name}` },
    );
  }
  return ck;
}

/** The conventional shard name, e.g. model-00001-of-00003.safetensors. */
export function shardName(index: number, count: number): string {
  const pad = (n: number) => String(n).padStart(5, "0");
  return `model-${pad(index + 1)}-of-${pad(count)}.safetensors`;
}

/** Writes `model.safetensors.index.json` for the given tensor-to-shard map. */
export async function writeShardIndex(
  dir: string,
  weightMap: Iterable<readonly [name: string, shard: string]>,
  totalSize: number,
): Promise<void> {
  const sorted = [...weightMap].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  await writeFileAtomic(join(dir, INDEX_FILE), indexText(sorted, totalSize));
}

/**
 * The index's text as JSON.stringify(..., null, 2) lays it out, in pieces of about 64 K characters:
 * an index may name 262,144 tensors, and an object of them all, its sorted copy and their text at
 * once cost some 100 MB.
 */
function* indexText(sorted: readonly (readonly [string, string])[], totalSize: number): Generator<string> {
  let piece = `{\n  "metadata": {\n    "total_size": ${totalSize}\n  },\n  "weight_map": {`;
  if (sorted.length === 0) piece += "}";
  for (const [k, [name, shard]] of sorted.entries()) {
    piece += `${k === 0 ? "" : ","}\n    ${JSON.stringify(name)}: ${JSON.stringify(shard)}`;
    if (piece.length >= 2 ** 16) {
      yield piece;
      piece = "";
    }
  }
  yield `${piece}${sorted.length === 0 ? "" : "\n  }"}\n}\n`;
}

/**
 * Writes in-memory tensors as one `model.safetensors`, or as shards of at most `maxShardBytes` of
 * data with an index when they do not fit in one.
 */
export async function writeCheckpoint(
  dir: string,
  tensors: readonly TensorData[],
  options: { maxShardBytes?: number; metadata?: Readonly<Record<string, string>> } = {},
): Promise<void> {
  const limit = options.maxShardBytes ?? Number.POSITIVE_INFINITY;
  const groups: TensorData[][] = [[]];
  let size = 0;
  for (const tensor of tensors) {
    const current = groups[groups.length - 1] as TensorData[];
    if (current.length > 0 && size + tensor.data.byteLength > limit) {
      groups.push([tensor]);
      size = tensor.data.byteLength;
    } else {
      current.push(tensor);
      size += tensor.data.byteLength;
    }
  }
  if (groups.length === 1) {
    await writeSafetensors(join(dir, "model.safetensors"), tensors, options.metadata);
    return;
  }
  const weightMap: Record<string, string> = {};
  for (const [i, group] of groups.entries()) {
    const name = shardName(i, groups.length);
    await writeSafetensors(join(dir, name), group, options.metadata);
    for (const t of group) weightMap[t.name] = name;
  }
  await writeShardIndex(
    dir,
    Object.entries(weightMap),
    tensors.reduce((sum, t) => sum + t.data.byteLength, 0),
  );
}
