import { writeSync } from "node:fs";
import { type FileHandle, mkdir, open, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { temporarySibling } from "../common/atomic-write.js";
import { BringupError } from "../common/errors.js";
import { outputError } from "./output-errors.js";
import {
  encodeSafetensorsHeader,
  type StoredTensor,
  type TensorInfo,
  type TensorLayout,
} from "./safetensors-header.js";

/**
 * Writes a safetensors file whose layout is known up front. Each tensor is written front to back,
 * chunk by chunk, and tensors may interleave (a weight and its scales can be produced together);
 * bytes go to a temporary sibling that `finish` renames into place once every byte is there.
 * `abort` removes it. Other threads may write parts in place: `reserve` hands out where the next
 * bytes of a tensor go in `temporaryPath`, and the caller sees them written before `finish`.
 */
export class SafetensorsWriter {
  readonly #handle: FileHandle;
  readonly #tmp: string;
  readonly #dataStart: number;
  readonly #byName: ReadonlyMap<string, StoredTensor>;
  readonly #written = new Map<string, number>();

  private constructor(
    readonly path: string,
    tmp: string,
    handle: FileHandle,
    dataStart: number,
    readonly tensors: readonly TensorInfo[],
    byName: ReadonlyMap<string, StoredTensor>,
  ) {
    this.#tmp = tmp;
    this.#handle = handle;
    this.#dataStart = dataStart;
    this.#byName = byName;
  }

  /** The file being written, until `finish` renames it or `abort` removes it. */
  get temporaryPath(): string {
    return this.#tmp;
  }

  static async create(
    path: string,
    layouts: readonly TensorLayout[],
    metadata: Readonly<Record<string, string>> = {},
  ): Promise<SafetensorsWriter> {
    const { header, tensors, byName } = encodeSafetensorsHeader(layouts, metadata, path);
    const tmp = temporarySibling(path);
    let handle: FileHandle;
    try {
      await mkdir(dirname(path), { recursive: true });
      handle = await open(tmp, "wx");
    } catch (error) {
      throw outputError(error, path);
    }
    const prefix = new Uint8Array(8);
    new DataView(prefix.buffer).setBigUint64(0, BigInt(header.length), true);
    try {
      await handle.write(prefix, 0, 8, 0);
      await handle.write(header, 0, header.length, 8);
    } catch (error) {
      await handle.close();
      await rm(tmp, { force: true });
      throw outputError(error, path);
    }
    return new SafetensorsWriter(path, tmp, handle, 8 + header.length, tensors, byName);
  }

  /** Appends the next bytes of tensor `name`. */
  async write(name: string, bytes: Uint8Array): Promise<void> {
    const position = this.reserve(name, bytes.length);
    let done = 0;
    while (done < bytes.length) {
      const { bytesWritten } = await this.#handle
        .write(bytes, done, bytes.length - done, position + done)
        .catch((error: unknown) => {
          throw outputError(error, this.path);
        });
      done += bytesWritten;
    }
  }

  /**
   * Counts the next `bytes` of tensor `name` as written and returns their position in the file: the
   * caller writes them there, in `temporaryPath`, before `finish`.
   */
  reserve(name: string, bytes: number): number {
    const info = this.#byName.get(name);
    const written = this.#written.get(name) ?? 0;
    if (info === undefined || written + bytes > info.byteLength) {
      throw new BringupError(
        "WRITE_LAYOUT",
        `${this.path}: ${bytes} bytes for ${JSON.stringify(name)} are not in the layout or run past its ${info?.byteLength ?? 0} bytes.`,
        { subject: `${this.path}#${name}` },
      );
    }
    this.#written.set(name, written + bytes);
    return this.#dataStart + info.dataOffsets[0] + written;
  }

  async finish(): Promise<void> {
    const missing = this.tensors.filter((t) => (this.#written.get(t.name) ?? 0) !== t.byteLength);
    if (missing.length > 0) {
      await this.abort();
      const first = missing[0] as TensorInfo;
      throw new BringupError(
        "WRITE_INCOMPLETE",
        `${this.path}: ${missing.length} tensors were not fully written (first: ${JSON.stringify(first.name)}, ${this.#written.get(first.name) ?? 0} of ${first.byteLength} bytes); the file was not created.`,
        { subject: `${this.path}#${first.name}` },
      );
    }
    // No fsync, like writeFileAtomic: the rename keeps readers from half-written files; durability
    // across power loss is the filesystem's usual policy.
    await this.#handle.close();
    await rename(this.#tmp, this.path);
  }

  async abort(): Promise<void> {
    await this.#handle.close().catch(() => undefined);
    await rm(this.#tmp, { force: true });
  }
}

/**
 * Writes all of `bytes` at `position` of an open file, blocking: for bytes placed by `reserve` from a
 * worker. A full disk or a read-only file is reported as such for `path`.
 */
export function writeAtSync(fd: number, bytes: Uint8Array, position: number, path = `fd ${fd}`): void {
  try {
    for (let done = 0; done < bytes.length; )
      done += writeSync(fd, bytes, done, bytes.length - done, position + done);
  } catch (error) {
    throw outputError(error, path);
  }
}

export interface TensorData extends TensorLayout {
  readonly data: Uint8Array;
}

/** Writes whole tensors held in memory to one file, atomically, with optional `__metadata__`. */
export async function writeSafetensors(
  path: string,
  tensors: readonly TensorData[],
  metadata: Readonly<Record<string, string>> = {},
): Promise<void> {
  const writer = await SafetensorsWriter.create(path, tensors, metadata);
  try {
    for (const [i, tensor] of tensors.entries()) {
      const info = writer.tensors[i] as TensorInfo;
      if (tensor.data.byteLength !== info.byteLength) {
        throw new BringupError(
          "SAFETENSORS_SHAPE_MISMATCH",
          `${path}#${tensor.name}: ${tensor.data.byteLength} bytes given, but shape [${tensor.shape.join(", ")}] of ${tensor.dtype} needs ${info.byteLength}.`,
          { subject: `${path}#${tensor.name}` },
        );
      }
      await writer.write(tensor.name, tensor.data);
    }
  } catch (error) {
    await writer.abort();
    throw error;
  }
  await writer.finish();
}
