import { createHash } from "node:crypto";
import { type Checkpoint, openCheckpoint } from "./checkpoint.js";
import { detectLogicalTensors, type LogicalTensor, logicalRows, readLogicalRows } from "./logical.js";

export interface WeightComparison {
  readonly name: string;
  readonly formatA: string;
  readonly formatB: string;
  /** sha256 of the stored bytes of every part, in order. */
  readonly sha256A: string;
  readonly sha256B: string;
  readonly bytesIdentical: boolean;
  /** Whether the decoded float32 values are bit for bit the same (NaN matches NaN). */
  readonly valuesIdentical: boolean;
  readonly mismatches: number;
  readonly firstMismatch?: number;
  readonly maxAbsDifference: number;
}

export interface VerifyReport {
  readonly a: string;
  readonly b: string;
  readonly ok: boolean;
  readonly weights: readonly WeightComparison[];
  readonly onlyInA: readonly string[];
  readonly onlyInB: readonly string[];
}

const CHUNK_BYTES = 16 * 2 ** 20;

function format(t: LogicalTensor): string {
  return t.kind === "plain" ? t.dtype : t.kind === "fp8" ? `fp8-e4m3 [${t.block.join("x")}]` : t.kind;
}

async function checksum(ck: Checkpoint, t: LogicalTensor): Promise<string> {
  const hash = createHash("sha256");
  for (const part of t.parts) {
    const size = ck.tensor(part).byteLength;
    for (let at = 0; at < size; at += CHUNK_BYTES)
      hash.update(await ck.readTensorRange(part, at, Math.min(size, at + CHUNK_BYTES)));
  }
  return hash.digest("hex");
}

async function compare(
  x: Checkpoint,
  a: LogicalTensor,
  y: Checkpoint,
  b: LogicalTensor,
): Promise<WeightComparison> {
  const [sha256A, sha256B] = [await checksum(x, a), await checksum(y, b)];
  const base = {
    name: a.name,
    formatA: format(a),
    formatB: format(b),
    sha256A,
    sha256B,
    bytesIdentical: sha256A === sha256B,
  };
  const sameShape = a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);
  if (!sameShape)
    return { ...base, valuesIdentical: false, mismatches: Number.NaN, maxAbsDifference: Number.NaN };
  const { rows, cols } = logicalRows(a);
  const step = Math.max(1, Math.floor(CHUNK_BYTES / 4 / Math.max(1, cols)));
  let mismatches = 0;
  let firstMismatch: number | undefined;
  let maxAbsDifference = 0;
  for (let s = 0; s < rows; s += step) {
    const e = Math.min(rows, s + step);
    const [va, vb] = [await readLogicalRows(x, a, s, e), await readLogicalRows(y, b, s, e)];
    const [ba, bb] = [
      new Uint32Array(va.buffer, va.byteOffset, va.length),
      new Uint32Array(vb.buffer, vb.byteOffset, vb.length),
    ];
    // The usual case, every bit the same, is one memcmp; only a difference is looked at value by value.
    if (
      Buffer.from(ba.buffer, ba.byteOffset, ba.byteLength).equals(
        Buffer.from(bb.buffer, bb.byteOffset, bb.byteLength),
      )
    )
      continue;
    for (let i = 0; i < ba.length; i += 1) {
      if (ba[i] === bb[i]) continue;
      const [p, q] = [va[i] as number, vb[i] as number];
      if (Number.isNaN(p) && Number.isNaN(q)) continue;
      mismatches += 1;
      firstMismatch ??= s * cols + i;
      maxAbsDifference = Math.max(maxAbsDifference, Math.abs(p - q));
    }
  }
  return {
    ...base,
    valuesIdentical: mismatches === 0,
    mismatches,
    ...(firstMismatch === undefined ? {} : { firstMismatch }),
    maxAbsDifference,
  };
}

/**
 * Compares two checkpoints weight by weight, whatever their formats: checksums of the stored bytes,
 * and bit identity of the decoded values (so MXFP4 and its exact FP8 re-encoding verify as equal).
 */
export async function verifyCheckpoints(pathA: string, pathB: string): Promise<VerifyReport> {
  const x = await openCheckpoint(pathA);
  try {
    const y = await openCheckpoint(pathB);
    try {
      const [la, lb] = [detectLogicalTensors(x.tensors), detectLogicalTensors(y.tensors)];
      const byName = new Map(lb.map((t) => [t.name, t]));
      const weights: WeightComparison[] = [];
      for (const a of la) {
        const b = byName.get(a.name);
        if (b !== undefined) weights.push(await compare(x, a, y, b));
      }
      const namesA = new Set(la.map((t) => t.name));
      const onlyInA = la.filter((t) => !byName.has(t.name)).map((t) => t.name);
      const onlyInB = lb.filter((t) => !namesA.has(t.name)).map((t) => t.name);
      const ok = onlyInA.length === 0 && onlyInB.length === 0 && weights.every((w) => w.valuesIdentical);
      return { a: pathA, b: pathB, ok, weights, onlyInA, onlyInB };
    } finally {
      await y.close();
    }
  } finally {
    await x.close();
  }
}
