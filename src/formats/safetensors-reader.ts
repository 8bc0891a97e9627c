import { fstatSync, read, readSync } from "node:fs";
import { promisify } from "node:util";
import { BringupError } from "../common/errors.js";
import { READ_HANDLES } from "./file-handles.js";
import {
  type HeaderBudget,
  MAX_HEADER_BYTES,
  parseSafetensorsHeader,
  type StoredTensor,
  type TensorInfo,
} from "./safetensors-header.js";

export interface OpenOptions {
  /**
   * Read on the calling thread instead of the thread pool. For worker threads that have nothing else
   * to do meanwhile: no hand-off per read, and the bytes land in the cache of the core that uses them.
   */
  readonly blockingReads?: boolean;
  /** Tensors the file may still list, shared by a checkpoint's shards (see MAX_TENSORS). */
  readonly budget?: HeaderBudget;
}

const readAsync = promisify(read);

/**
 * An open safetensors file. Only the header is held in memory; tensor bytes are read on request by
 * byte range, so files of any size (past 4 GiB) stream. The descriptor comes from this thread's
 * bounded READ_HANDLES, so any number of files can be open.
 */
export class SafetensorsFile {
  /** Built on the first lookup by name: a checkpoint looks its tensors up in a map of its own. */
  #byName: Map<string, StoredTensor> | undefined;
  readonly #blocking: boolean;

  constructor(
    readonly path: string,
    /** File offset of the data section (8 + header length). */
    readonly dataStart: number,
    readonly metadata: Readonly<Record<string, string>>,
    /** In data order. */
    readonly tensors: readonly StoredTensor[],
    options: OpenOptions = {},
  ) {
    this.#blocking = options.blockingReads === true;
  }

  has(name: string): boolean {
    return this.#names().has(name);
  }

  tensor(name: string): StoredTensor {
    const info = this.#names().get(name);
    if (info === undefined) {
      throw new BringupError("TENSOR_NOT_FOUND", `${this.path}: no tensor named ${JSON.stringify(name)}.`, {
        subject: `${this.path}#${name}`,
      });
    }
    return info;
  }

  #names(): Map<string, StoredTensor> {
    this.#byName ??= new Map(this.tensors.map((t) => [t.name, t]));
    return this.#byName;
  }

  /** The whole tensor's bytes. */
  readTensor(name: string): Promise<Uint8Array> {
    return this.readTensorRange(name, 0, this.tensor(name).byteLength);
  }

  /**
   * Bytes [start, end) of one tensor, for streaming a large tensor in pieces. With `into` (at least
   * end - start bytes), the bytes land there and a view of it is returned: a caller streaming many
   * chunks reuses one buffer instead of faulting in fresh memory each time.
   */
  readTensorRange(name: string, start: number, end: number, into?: Uint8Array): Promise<Uint8Array> {
    return this.readRange(this.tensor(name), start, end, into);
  }

  /** readTensorRange of one of this file's tensors, given as found. */
  async readRange(info: TensorInfo, start: number, end: number, into?: Uint8Array): Promise<Uint8Array> {
    const { name } = info;
    if (
      !(
        Number.isSafeInteger(start) &&
        Number.isSafeInteger(end) &&
        0 <= start &&
        start <= end &&
        end <= info.byteLength
      )
    ) {
      throw new BringupError(
        "BAD_RANGE",
        `${this.path}#${name}: byte range [${start}, ${end}) is outside the tensor's ${info.byteLength} bytes.`,
        { subject: `${this.path}#${name}` },
      );
    }
    const out =
      into !== undefined && into.length >= end - start
        ? into.subarray(0, end - start)
        : new Uint8Array(end - start);
    const position = this.dataStart + info.dataOffsets[0] + start;
    const fd = READ_HANDLES.acquire(this.path);
    try {
      await readFully(fd, out, position, this.#blocking, `${this.path}#${name}`);
    } finally {
      READ_HANDLES.release(this.path);
    }
    return out;
  }

  close(): Promise<void> {
    READ_HANDLES.close(this.path);
    return Promise.resolve();
  }
}

/** Reads all of `out` from `position` of the file. */
async function readFully(
  fd: number,
  out: Uint8Array,
  position: number,
  blocking: boolean,
  subject: string,
): Promise<void> {
  let done = 0;
  while (done < out.length) {
    // A single read returns at most about 2 GiB; loop until the range is in.
    const length = Math.min(out.length - done, 1 << 30);
    const bytesRead = blocking
      ? readSync(fd, out, done, length, position + done)
      : (await readAsync(fd, out, done, length, position + done)).bytesRead;
    if (bytesRead === 0) {
      throw new BringupError("SAFETENSORS_TRUNCATED", `${subject}: the file ended early; it is truncated.`, {
        subject,
      });
    }
    done += bytesRead;
  }
}

/** Opens and validates a safetensors file; the caller closes it. */
export async function openSafetensors(path: string, options: OpenOptions = {}): Promise<SafetensorsFile> {
  const fd = READ_HANDLES.acquire(path);
  let opened = false;
  try {
    const { size } = fstatSync(fd);
    if (size < 8) {
      throw new BringupError(
        "SAFETENSORS_TRUNCATED",
        `${path}: ${size} bytes is too short for a safetensors file; it is truncated or empty.`,
        { subject: path },
      );
    }
    const prefix = new Uint8Array(8);
    await readFully(fd, prefix, 0, false, path);
    const headerLength = new DataView(prefix.buffer).getBigUint64(0, true);
    if (headerLength > BigInt(size - 8)) {
      throw new BringupError(
        "SAFETENSORS_HEADER_PAST_END",
        `${path}: the header length ${headerLength} runs past the end of the ${size}-byte file; it is truncated or not safetensors.`,
        { subject: path },
      );
    }
    if (headerLength > BigInt(MAX_HEADER_BYTES)) {
      throw new BringupError(
        "SAFETENSORS_BAD_HEADER",
        `${path}: the header length ${headerLength} is over 100 MB; the file is corrupt.`,
        { subject: path },
      );
    }
    const header = new Uint8Array(Number(headerLength));
    await readFully(fd, header, 8, false, path);
    const dataStart = 8 + header.length;
    const parsed = parseSafetensorsHeader(header, size - dataStart, path, options.budget);
    opened = true;
    return new SafetensorsFile(path, dataStart, parsed.metadata, parsed.tensors, options);
  } finally {
    READ_HANDLES.release(path);
    if (!opened) READ_HANDLES.close(path);
  }
}
