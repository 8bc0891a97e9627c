import { stat } from "node:fs/promises";
import { join } from "node:path";
import { MAX_CONFIG_BYTES, readBoundedText } from "./bounded-file.js";
import { openCheckpoint } from "./checkpoint.js";
import { elementCount } from "./dtypes.js";
import { detectLogicalTensors, formatName, type LogicalKind } from "./logical.js";

export interface InspectReport {
  readonly path: string;
  readonly indexed: boolean;
  readonly files: { file: string; tensors: number; bytes: number }[];
  readonly tensors: { name: string; dtype: string; shape: readonly number[]; bytes: number; file: string }[];
  readonly weights: {
    name: string;
    format: string;
    shape: readonly number[];
    parts: readonly string[];
    bytes: number;
  }[];
  readonly formats: Partial<Record<LogicalKind, { weights: number; bytes: number }>>;
  readonly totals: { tensors: number; bytes: number; parameters: number };
  readonly metadata: Readonly<Record<string, string>>;
  /** config.json's quantization_config, when the directory has one. */
  readonly quantizationConfig?: unknown;
}

/** What a checkpoint holds: stored tensors, the logical weights and formats they form, totals. */
export async function inspectCheckpoint(path: string): Promise<InspectReport> {
  const ck = await openCheckpoint(path);
  try {
    const tensors = ck.tensors.map((t) => ({
      name: t.name,
      dtype: t.dtype,
      shape: t.shape,
      bytes: t.byteLength,
      file: t.file,
    }));
    // One pass over the tensors, not one per shard: checkpoints of many shards stay linear.
    const files = ck.shards.map((s) => ({ file: s.path, tensors: 0, bytes: 0 }));
    const byFile = new Map(files.map((f) => [f.file, f]));
    for (const t of ck.tensors) {
      const f = byFile.get(t.file) as (typeof files)[number];
      f.tensors += 1;
      f.bytes += t.byteLength;
    }
    const weights = detectLogicalTensors(ck.tensors).map((w) => ({
      name: w.name,
      format: formatName(w),
      shape: w.shape,
      parts: w.parts,
      bytes: w.parts.reduce((n, p) => n + ck.tensor(p).byteLength, 0),
      kind: w.kind,
    }));
    const formats: InspectReport["formats"] = {};
    for (const w of weights) {
      const seen = formats[w.kind] ?? { weights: 0, bytes: 0 };
      formats[w.kind] = { weights: seen.weights + 1, bytes: seen.bytes + w.bytes };
    }
    let quantizationConfig: unknown;
    if ((await stat(path)).isDirectory()) {
      const config = await readBoundedText(join(path, "config.json"), MAX_CONFIG_BYTES).catch(
        () => undefined,
      );
      if (config !== undefined) {
        try {
          quantizationConfig = (JSON.parse(config) as { quantization_config?: unknown }).quantization_config;
        } catch {
          quantizationConfig = undefined; // a broken config is not the weights' problem; inspect still reports them
        }
      }
    }
    return {
      path,
      indexed: ck.indexed,
      files,
      tensors,
      weights: weights.map(({ kind: _kind, ...w }) => w),
      formats,
      totals: {
        tensors: tensors.length,
        bytes: ck.byteLength,
        parameters: weights.reduce((n, w) => n + elementCount(w.shape), 0),
      },
      metadata: ck.metadata,
      ...(quantizationConfig === undefined ? {} : { quantizationConfig }),
    };
  } finally {
    await ck.close();
  }
}
