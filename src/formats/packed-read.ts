import { open } from "node:fs/promises";
import { crc32 } from "node:zlib";
import { BringupError } from "../common/errors.js";
import { openError } from "./file-handles.js";
import type { PackedCheckpoint, PackedShard, PackedTensor } from "./packed-manifest.js";

/** The longest single read: one read returns at most about 2 GiB. */
const MAX_READ = 1 << 30;

/**
 * Reads a packed checkpoint's tensors straight into the memory `destination` gives for each (a
 * whole tensor's bytes, in the engine's layout): every rank's file at once, each shard with one
 * read at its offset into its place in the tensor (rank r's rows at r/ranks of the way in), its
 * CRC-32 checked as it lands. A replicated tensor is read from rank 0 (`weights verify` checks every
 * copy). Nothing is parsed or converted. PACKED_CHECKSUM_MISMATCH names the file, tensor and rank.
 */
export async function readPackedTensors(
  packed: PackedCheckpoint,
  destination: (t: PackedTensor) => Uint8Array,
): Promise<void> {
  const { manifest, rankPaths } = packed;
  const targets = manifest.tensors.map((t) => ({ t, into: destination(t) }));
  await Promise.all(
    rankPaths.map(async (path, r) => {
      const handle = await open(path, "r").catch((error: unknown) => {
        throw openError(error, path);
      });
      try {
        for (const { t, into } of targets) {
          if (t.split === "replicated" && r > 0) continue;
          const shard = t.shards[r] as PackedShard;
          const start = t.split === "rows" ? r * shard.bytes : 0;
          const view = into.subarray(start, start + shard.bytes);
          await readShard(handle, view, shard.offset, path, t.name);
          checkCrc(crc32(view), shard, path, t, r);
        }
      } finally {
        await handle.close();
      }
    }),
  );
}

/** Refuses a shard whose bytes' CRC-32 `got` is not the manifest's, naming file, tensor and rank. */
export function checkCrc(got: number, shard: PackedShard, path: string, t: PackedTensor, rank: number): void {
  if (got !== shard.crc32) {
    throw new BringupError(
      "PACKED_CHECKSUM_MISMATCH",
      `${path}: tensor ${t.name} (rank ${rank}, ${shard.bytes} bytes at offset ${shard.offset}) has CRC-32 ${hex(got)} where the manifest says ${hex(shard.crc32)}; the file is corrupt, copy or pack it again.`,
      { subject: `${path}#${t.name}` },
    );
  }
}

const hex = (n: number) => n.toString(16).padStart(8, "0");

/** Reads all of `into` from `position` of the file, refusing a file that ends early. */
export async function readShard(
  handle: Awaited<ReturnType<typeof open>>,
  into: Uint8Array,
  position: number,
  path: string,
  tensor: string,
): Promise<void> {
  for (let done = 0; done < into.length; ) {
    const { bytesRead } = await handle.read(
      into,
      done,
      Math.min(into.length - done, MAX_READ),
      position + done,
    );
    if (bytesRead === 0) {
      throw new BringupError(
        "PACKED_FILE_TRUNCATED",
        `${path}: the file ends inside tensor ${tensor}; it is truncated, copy or pack it again.`,
        { subject: path },
      );
    }
    done += bytesRead;
  }
}
