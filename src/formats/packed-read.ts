import { open } from "node:fs/promises";
import { crc32 } from "node:zlib";
import { BringupError } from "../common/errors.js";
import { openError } from "./file-handles.js";
import type { PackedCheckpoint, PackedShard, PackedTensor } from "./packed-manifest.js";

/** The longest single read: one read returns at most about 2 GiB. */
const MAX_READ = 1 << 30;

/** Bytes of one read: large enough for the disk's readahead, small enough to keep several in flight. */
const PIECE_BYTES = 32 * 2 ** 20;
/** Reads in flight per rank file, so the kernel copies on several threads while the CRC runs here. */
const DEPTH = 2;

/** One read of a rank file: bytes of one shard, and whether they start or end it. */
interface Piece {
  readonly t: PackedTensor;
  readonly shard: PackedShard;
  readonly into: Uint8Array;
  readonly position: number;
  readonly first: boolean;
  readonly last: boolean;
}

/**
 * Reads a packed checkpoint's tensors straight into the memory `destination` gives for each (a
 * whole tensor's bytes, in the engine's layout): every rank's file at once, each in large reads at
 * its offsets into each tensor's place (rank r's rows at r/ranks of the way in), a few reads in
 * flight while the CRC-32 of what landed is checked. A replicated tensor is read from rank 0
 * (`weights verify` checks every copy). Nothing is parsed or converted. PACKED_CHECKSUM_MISMATCH
 * names the file, tensor and rank. `pieceBytes` is the size of one read.
 */
export async function readPackedTensors(
  packed: PackedCheckpoint,
  destination: (t: PackedTensor) => Uint8Array,
  pieceBytes = PIECE_BYTES,
): Promise<void> {
  const { manifest, rankPaths } = packed;
  const targets = manifest.tensors.map((t) => ({ t, into: destination(t) }));
  await Promise.all(
    rankPaths.map(async (path, r) => {
      const pieces: Piece[] = [];
      for (const { t, into } of targets) {
        if (t.split === "replicated" && r > 0) continue;
        const shard = t.shards[r] as PackedShard;
        const start = t.split === "rows" ? r * shard.bytes : 0;
        for (let at = 0; at === 0 || at < shard.bytes; at += pieceBytes) {
          const end = Math.min(shard.bytes, at + pieceBytes);
          pieces.push({
            t,
            shard,
            into: into.subarray(start + at, start + end),
            position: shard.offset + at,
            first: at === 0,
            last: end === shard.bytes,
          });
        }
      }
      const handle = await open(path, "r").catch((error: unknown) => {
        throw openError(error, path);
      });
      const inFlight: Promise<void>[] = [];
      try {
        let crc = 0;
        for (const [i, piece] of pieces.entries()) {
          for (let next = i + inFlight.length; inFlight.length < DEPTH && next < pieces.length; next++) {
            const p = pieces[next] as Piece;
            const read = readShard(handle, p.into, p.position, path, p.t.name);
            read.catch(() => {}); // awaited in order below; a later failure must not go unhandled first
            inFlight.push(read);
          }
          await inFlight.shift();
          crc = crc32(piece.into, piece.first ? 0 : crc);
          if (piece.last) checkCrc(crc, piece.shard, path, piece.t, r);
        }
      } finally {
        await Promise.allSettled(inFlight);
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
