import { type FileHandle, mkdir, open, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { temporarySibling } from "../common/atomic-write.js";
import { BringupError } from "../common/errors.js";
import { encodeSafetensorsHeader, type TensorInfo, type TensorLayout } from "./safetensors-header.js";

/**
 * Writes a safetensors file whose layout is known up front, tensor by tensor and chunk by chunk, to
 * a temporary sibling; `finish` renames it into place once every byte is there, `abort` removes it.
 */
export class SafetensorsWriter {
  readonly #handle: FileHandle;
  readonly #tmp: string;
  readonly #dataStart: number;
  #index = 0;
  #written = 0;
  #position: number;

  private constructor(
    readonly path: string,
    tmp: string,
    handle: FileHandle,
    dataStart: number,
    readonly tensors: readonly TensorInfo[],
  ) {
    this.#tmp = tmp;
    this.#handle = handle;
    this.#dataStart = dataStart;
    this.#position = dataStart;
  }

  static async create(
    path: string,
    layouts: readonly TensorLayout[],
    metadata: Readonly<Record<string, string>> = {},
  ): Promise<SafetensorsWriter> {
    const { header, tensors } = encodeSafetensorsHeader(layouts, metadata);
    await mkdir(dirname(path), { recursive: true });
    const tmp = temporarySibling(path);
    const handle = await open(tmp, "wx");
    const prefix = new Uint8Array(8);
    new DataView(prefix.buffer).setBigUint64(0, BigInt(header.length), true);
    try {
      await handle.write(prefix, 0, 8, 0);
      await handle.write(header, 0, header.length, 8);
    } catch (error) {
      await handle.close();
      await rm(tmp, { force: true });
      throw error;
    }
    return new SafetensorsWriter(path, tmp, handle, 8 + header.length, tensors);
  }

  /** Appends bytes of the tensor `name`, which must be the one being written (tensors go in order). */
  async write(name: string, bytes: Uint8Array): Promise<void> {
    let info = this.tensors[this.#index];
    while (info !== undefined && this.#written === info.byteLength && info.name !== name) {
      this.#index += 1;
      this.#written = 0;
      info = this.tensors[this.#index];
    }
    if (info === undefined || info.name !== name || this.#written + bytes.length > info.byteLength) {
      throw new BringupError(
        "WRITE_ORDER",
        `${this.path}: bytes for ${JSON.stringify(name)} arrive out of order or past its size; write tensors in layout order.`,
        { subject: `${this.path}#${name}` },
      );
    }
    let done = 0;
    while (done < bytes.length) {
      const { bytesWritten } = await this.#handle.write(bytes, done, bytes.length - done, this.#position);
      done += bytesWritten;
      this.#position += bytesWritten;
    }
    this.#written += bytes.length;
  }

  async finish(): Promise<void> {
    const last = this.tensors[this.tensors.length - 1];
    const expectedEnd = this.#dataStart + (last?.dataOffsets[1] ?? 0);
    if (this.#position !== expectedEnd) {
      await this.abort();
      throw new BringupError(
        "WRITE_INCOMPLETE",
        `${this.path}: ${expectedEnd - this.#position} bytes of tensor data were never written; the file was not created.`,
        { subject: this.path },
      );
    }
    await this.#handle.sync();
    await this.#handle.close();
    await rename(this.#tmp, this.path);
  }

  async abort(): Promise<void> {
    await this.#handle.close().catch(() => undefined);
    await rm(this.#tmp, { force: true });
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
