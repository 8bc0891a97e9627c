import { createHash } from "node:crypto";
import { open } from "node:fs/promises";
import { crc32 } from "node:zlib";
import { BringupError } from "../common/errors.js";
import { openCheckpoint } from "./checkpoint.js";
import { decodeToFloat32 } from "./decode.js";
import { DTYPE_BYTES } from "./dtypes.js";
import { openError } from "./file-handles.js";
import { openPacked, type PackedShard, type PackedTensor } from "./packed-manifest.js";
import { checkCrc, readShard } from "./packed-read.js";
import type { VerifyReport, WeightComparison } from "./verify.js";

/** Bytes compared at a time, of each side. */
const CHUNK_BYTES = 16 * 2 ** 20;

/**
 * Proves packed directory `packedDir` holds exactly checkpoint `source`'s values: the same tensor
 * names, and for every tensor the same dtype and shape and, on every rank (replicas included), the
 * same bytes as the source's range, whose CRC-32 matches the manifest. sha256A is the source
 * tensor's bytes, sha256B the packed tensor's reassembled from its ranks (rank 0's copy of a
 * replicated one). Equal bytes of one dtype are equal values, so valuesIdentical is bytesIdentical.
 */
export async function verifyPacked(source: string, packedDir: string): Promise<VerifyReport> {
  const packed = await openPacked(packedDir);
  const ck = await openCheckpoint(source);
  const handles = await Promise.all(
    packed.rankPaths.map((p) =>
      open(p, "r").catch((error: unknown) => {
        throw openError(error, p);
      }),
    ),
  );
  try {
    const sourceNames = new Set(ck.tensors.map((t) => t.name));
    const weights: WeightComparison[] = [];
    const a = new Uint8Array(CHUNK_BYTES);
    const b = new Uint8Array(CHUNK_BYTES);
    for (const t of packed.manifest.tensors) {
      if (!sourceNames.has(t.source.tensor)) continue;
      const info = ck.tensor(t.source.tensor);
      if (info.dtype !== t.dtype || info.shape.join() !== t.shape.join()) {
        throw new BringupError(
          "PACKED_MANIFEST_INVALID",
          `${packed.manifestPath}: tensor ${t.name} is ${t.dtype} [${t.shape}] but the source's ${t.source.tensor} is ${info.dtype} [${info.shape}]; it was packed from another checkpoint.`,
          { subject: t.name },
        );
      }
      const hashA = createHash("sha256");
      const hashB = createHash("sha256");
      let mismatches = 0;
      let bytesDiffer = false;
      let firstMismatch: number | undefined;
      let maxAbsDifference = 0;
      for (let r = 0; r < packed.manifest.ranks; r++) {
        const shard = t.shards[r] as PackedShard;
        const start = t.split === "rows" ? r * shard.bytes : 0;
        const hashed = t.split === "rows" || r === 0;
        let crc = 0;
        for (let at = 0; at < shard.bytes; at += CHUNK_BYTES) {
          const n = Math.min(CHUNK_BYTES, shard.bytes - at);
          const va = await ck.readTensorRange(t.source.tensor, start + at, start + at + n, a);
          const vb = b.subarray(0, n);
          await readShard(
            handles[r] as (typeof handles)[number],
            vb,
            shard.offset + at,
            packed.rankPaths[r] as string,
            t.name,
          );
          crc = crc32(vb, crc);
          if (hashed) {
            hashA.update(va);
            hashB.update(vb);
          }
          if (!Buffer.from(va.buffer, va.byteOffset, n).equals(Buffer.from(vb.buffer, vb.byteOffset, n))) {
            bytesDiffer = true;
            const d = differences(t, va, vb, start + at);
            mismatches += d.mismatches;
            firstMismatch ??= d.first;
            maxAbsDifference = Math.max(maxAbsDifference, d.max);
          }
        }
        checkCrc(crc, shard, packed.rankPaths[r] as string, t, r);
      }
      const sha256A = hashA.digest("hex");
      const sha256B = hashB.digest("hex");
      weights.push({
        name: t.name,
        formatA: t.dtype,
        formatB: `${t.dtype} packed ${t.split === "rows" ? `in ${packed.manifest.ranks} row ranges` : "replicated"}`,
        valuesIdentical: mismatches === 0,
        mismatches,
        ...(firstMismatch === undefined ? {} : { firstMismatch }),
        maxAbsDifference,
        sha256A,
        sha256B,
        bytesIdentical: !bytesDiffer,
      });
    }
    const packedNames = new Set(packed.manifest.tensors.map((t) => t.source.tensor));
    const onlyInA = ck.tensors.filter((t) => !packedNames.has(t.name)).map((t) => t.name);
    const onlyInB = packed.manifest.tensors
      .filter((t) => !sourceNames.has(t.source.tensor))
      .map((t) => t.name);
    return {
      a: source,
      b: packedDir,
      ok: onlyInA.length === 0 && onlyInB.length === 0 && weights.every((w) => w.bytesIdentical),
      weights,
      onlyInA,
      onlyInB,
    };
  } finally {
    await Promise.all(handles.map((h) => h.close()));
    await ck.close();
  }
}

/** How two same-dtype byte ranges of a tensor differ, element by element (`offset` in bytes). */
function differences(
  t: PackedTensor,
  a: Uint8Array,
  b: Uint8Array,
  offset: number,
): { mismatches: number; first?: number; max: number } {
  const size = DTYPE_BYTES[t.dtype];
  const [x, y] = [decodeToFloat32(t.dtype, a.slice(0, b.length)), decodeToFloat32(t.dtype, b.slice())];
  let mismatches = 0;
  let first: number | undefined;
  let max = 0;
  for (let i = 0; i < x.length; i++) {
    const [u, v] = [x[i] as number, y[i] as number];
    if (Object.is(u, v) || (Number.isNaN(u) && Number.isNaN(v))) continue;
    mismatches++;
    first ??= offset / size + i;
    max = Math.max(max, Math.abs(u - v));
  }
  return { mismatches, ...(first === undefined ? {} : { first }), max };
}
