import { basename, join } from "node:path";
import { writeDirectoryAtomic } from "../common/atomic-write.js";
import { BringupError } from "../common/errors.js";
import { type Checkpoint, openCheckpoint, writeShardIndex } from "./checkpoint.js";
import { copyCompanions } from "./companions.js";
import { type Dtype, dtypeBytes } from "./dtypes.js";
import { regroupGateUp, splitFirstAxis, stackFirstAxis, swapNibbles, transposeLast2 } from "./layout-ops.js";
import { detectLogicalTensors, type LogicalTensor } from "./logical.js";
import { HALVES_BLOCKS_SUFFIX, MXFP4_HALVES, MXFP4_LAYOUT_KEY, toHalves } from "./mxfp4-halves.js";
import type { TensorLayout } from "./safetensors-header.js";
import { SafetensorsWriter } from "./safetensors-writer.js";

/**
 * Lossless re-layouts of a checkpoint, each undone by its opposite rule. Weight rules match logical
 * names (an MXFP4 weight `W` covers `W_blocks` and `W_scales`); expert and rename rules match stored
 * tensor names and run last, in that order.
 */
export interface RelayoutRules {
  /** MXFP4 weights whose packing flips between low-nibble-first and high-nibble-first. */
  readonly swapNibbles?: RegExp;
  /**
   * Weights whose MXFP4 codes go into the engine's halves order (mxfp4-halves.ts), stored as
   * `W_hblocks`; config.json gains `"mxfp4_layout": "halves"`. A matching weight of three or more
   * dimensions (stacked experts) that is not MXFP4 in OCP order is refused by name.
   */
  readonly mxfp4Halves?: RegExp;
  /** Plain weights whose last two dimensions swap. */
  readonly transpose?: RegExp;
  /** Weights whose gate/up rows go from interleaved to concatenated halves, or back. */
  readonly gateUp?: { readonly match: RegExp; readonly to: "concatenated" | "interleaved" };
  /** Fused expert tensors split into one per expert: `to` is the replacement, with {e} for the index. */
  readonly splitExperts?: { readonly match: RegExp; readonly to: string };
  /** Per-expert tensors fused: `match` captures the index as (?<e>\d+); `to` names the fused tensor. */
  readonly fuseExperts?: { readonly match: RegExp; readonly to: string };
  /** Renames applied in order to every output name. */
  readonly rename?: readonly { readonly from: RegExp; readonly to: string }[];
}

interface Piece {
  name: string;
  dtype: Dtype;
  shape: number[];
  /** The bytes after the weight rules, read when needed. */
  read: () => Promise<Uint8Array>;
  /**
   * Bytes [start, end) after the weight rules, where every rule is one of whole 16-byte blocks
   * (nibble orders): a tensor of any size then passes through in bounded pieces.
   */
  readRange?: (start: number, end: number) => Promise<Uint8Array>;
  byteLength: number;
  shard: string;
}

interface Unit {
  outputs: TensorLayout[];
  shard: string;
  produce: () => Promise<Uint8Array[]>;
  /** The one output's bytes in pieces, in order, where its piece can be read so (Piece.readRange). */
  stream?: (write: (bytes: Uint8Array) => Promise<void>) => Promise<void>;
}

/** Bytes a streamed tensor is read and written in: whole MXFP4 blocks of 16 bytes. */
const STREAM_BYTES = 16 * 2 ** 20;

export interface RelayoutReport {
  readonly source: string;
  readonly output: string;
  readonly renamed: readonly { from: string; to: string }[];
  readonly tensors: number;
  /** The files beside the weights carried over (config.json, tokenizer, ...). */
  readonly copiedFiles: readonly string[];
}

function fail(source: string, name: string, what: string): never {
  throw new BringupError("RELAYOUT_INVALID", `${source}#${name}: ${what}`, { subject: `${source}#${name}` });
}

/** Stored tensors after the weight rules (nibbles, transpose, gate/up), still lazily read. */
function weightPieces(ck: Checkpoint, rules: RelayoutRules, source: string): Piece[] {
  const pieces: Piece[] = [];
  for (const w of detectLogicalTensors(ck.tensors)) {
    const steps: ((bytes: Uint8Array, part: Piece, index: number) => Uint8Array)[] = [];
    const shapes = w.parts.map((p) => [...ck.tensor(p).shape]);
    if (rules.swapNibbles?.test(w.name)) {
      if (w.kind !== "mxfp4") fail(source, w.name, "nibble order applies to MXFP4 weights only.");
      steps.push((bytes, _part, index) => (index === 0 ? swapNibbles(bytes) : bytes));
    }
    const halves = rules.mxfp4Halves?.test(w.name) === true && halvesStep(w, source, steps);
    // The steps so far work on whole 16-byte blocks; transpose and gate/up need the whole tensor.
    const blockwise = steps.length;
    if (rules.transpose?.test(w.name)) {
      if (w.kind !== "plain") {
        fail(
          source,
          w.name,
          `a ${w.kind} weight cannot be transposed losslessly (its scale blocks run along rows); dequantize it first.`,
        );
      }
      const t = shapes[0] as number[];
      if (t.length < 2) fail(source, w.name, "transpose needs at least 2 dimensions.");
      const size = dtypeBytes(w.dtype);
      steps.push((bytes) => transposeLast2(bytes, t, size).bytes);
      shapes[0] = [...t.slice(0, -2), t.at(-1) as number, t.at(-2) as number];
    }
    if (rules.gateUp?.match.test(w.name)) {
      if (rules.transpose?.test(w.name))
        fail(source, w.name, "transpose and gate/up re-layout one weight in separate runs.");
      gateUpStep(w, rules.gateUp.to === "interleaved", source, steps);
    }
    w.parts.forEach((part, index) => {
      const info = ck.tensor(part);
      const originalShape = [...info.shape];
      const applied = (bytes: Uint8Array) =>
        steps.reduce((b, step) => step(b, { ...piece, shape: originalShape }, index), bytes);
      const piece: Piece = {
        name: halves && index === 0 ? `${w.name}${HALVES_BLOCKS_SUFFIX}` : part,
        dtype: info.dtype,
        shape: shapes[index] as number[],
        shard: basename(info.file),
        byteLength: info.byteLength,
        read: async () => applied(await ck.readTensor(part)),
        ...(steps.length === blockwise
          ? {
              readRange: async (start: number, end: number) =>
                applied(await ck.readTensorRange(part, start, end)),
            }
          : {}),
      };
      pieces.push(piece);
    });
  }
  return pieces;
}

/**
 * Adds the step that puts an MXFP4 weight's codes in halves order, and says whether it did: plain
 * weights of fewer than three dimensions (norms, attention, routers) are left as they are; another
 * stacked weight, or codes already in halves order, are refused naming the weight.
 */
function halvesStep(
  w: LogicalTensor,
  source: string,
  steps: ((bytes: Uint8Array, part: Piece, index: number) => Uint8Array)[],
): boolean {
  if (w.kind === "mxfp4" && w.order === undefined) {
    steps.push((bytes, _part, index) => (index === 0 ? toHalves(bytes) : bytes));
    return true;
  }
  if (w.kind === "mxfp4")
    fail(source, w.name, "its MXFP4 codes are in halves order already; re-lay out the original checkpoint.");
  if (w.shape.length >= 3) {
    fail(
      source,
      w.name,
      `stacked experts in ${w.kind === "fp8" ? "FP8" : w.dtype}, not MXFP4: only MXFP4 codes have a halves order; convert the experts to MXFP4 first (--to mxfp4) or leave them out.`,
    );
  }
  return false;
}

function gateUpStep(
  w: LogicalTensor,
  toInterleaved: boolean,
  source: string,
  steps: ((bytes: Uint8Array, part: Piece, index: number) => Uint8Array)[],
): void {
  if (w.shape.length < 2) fail(source, w.name, "gate/up re-layout needs at least 2 dimensions.");
  if (w.kind === "fp8" && w.block[0] !== 1) {
    fail(
      source,
      w.name,
      "its scales cover 128 rows at once, so gate/up rows cannot move losslessly; use per-32 scales.",
    );
  }
  // Rows are the logical second-to-last axis; it has the same index in every stored part.
  const axis = w.shape.length - 2;
  steps.push((bytes, part) => regroupGateUp(bytes, part.shape, axis, dtypeBytes(part.dtype), toInterleaved));
}

function expertUnits(pieces: Piece[], rules: RelayoutRules, source: string): Unit[] {
  const units: Unit[] = [];
  const fused = new Map<string, { piece: Piece; e: number }[]>();
  for (const piece of pieces) {
    const split = rules.splitExperts;
    if (split?.match.test(piece.name)) {
      const count = piece.shape[0];
      if (count === undefined)
        fail(source, piece.name, "splitting experts needs a leading experts dimension.");
      const names = Array.from({ length: count }, (_, e) =>
        piece.name.replace(split.match, split.to.replaceAll("{e}", String(e))),
      );
      units.push({
        shard: piece.shard,
        outputs: names.map((name) => ({ name, dtype: piece.dtype, shape: piece.shape.slice(1) })),
        produce: async () => splitFirstAxis(await piece.read(), piece.shape).map((p) => p.bytes),
      });
      continue;
    }
    const fuse = rules.fuseExperts;
    const found = fuse === undefined ? null : piece.name.match(fuse.match);
    if (fuse !== undefined && found !== null && found.groups?.e !== undefined) {
      const target = piece.name.replace(fuse.match, fuse.to);
      fused.set(target, [...(fused.get(target) ?? []), { piece, e: Number(found.groups.e) }]);
      continue;
    }
    const readRange = piece.readRange;
    units.push({
      shard: piece.shard,
      outputs: [{ name: piece.name, dtype: piece.dtype, shape: piece.shape }],
      produce: async () => [await piece.read()],
      ...(readRange === undefined
        ? {}
        : {
            stream: async (write: (bytes: Uint8Array) => Promise<void>) => {
              for (let at = 0; at < piece.byteLength; at += STREAM_BYTES)
                await write(await readRange(at, Math.min(piece.byteLength, at + STREAM_BYTES)));
            },
          }),
    });
  }
  for (const [name, members] of fused) {
    members.sort((a, b) => a.e - b.e);
    members.forEach((m, i) => {
      if (m.e !== i)
        fail(
          source,
          m.piece.name,
          `experts to fuse into ${name} must be numbered 0..${members.length - 1}; index ${i} is missing or repeated.`,
        );
    });
    const first = (members[0] as { piece: Piece }).piece;
    units.push({
      shard: first.shard,
      outputs: [{ name, dtype: first.dtype, shape: [members.length, ...first.shape] }],
      // Fusing holds every expert of one tensor in memory at once: one fused tensor's worth.
      produce: async () => {
        const parts = [];
        for (const m of members) parts.push({ bytes: await m.piece.read(), shape: m.piece.shape });
        return [stackFirstAxis(parts).bytes];
      },
    });
  }
  return units;
}

/** Applies lossless re-layout rules, writing a new checkpoint directory atomically. */
export async function relayoutCheckpoint(
  source: string,
  output: string,
  rules: RelayoutRules,
  options: {
    /** Run on the finished output before it appears (a proof that it holds the source's values). */
    readonly check?: (dir: string) => Promise<void>;
    /** Stops the re-layout between pieces (Ctrl-C): nothing is left, and it rejects with INTERRUPTED. */
    readonly signal?: AbortSignal;
  } = {},
): Promise<RelayoutReport> {
  const { check, signal } = options;
  const stopHere = () => {
    if (signal?.aborted !== true) return;
    throw new BringupError("INTERRUPTED", `${output}: the re-layout was interrupted; nothing was written.`, {
      subject: output,
    });
  };
  const ck = await openCheckpoint(source);
  try {
    const units = expertUnits(weightPieces(ck, rules, source), rules, source);
    const renamed: { from: string; to: string }[] = [];
    const seen = new Set<string>();
    for (const unit of units) {
      unit.outputs = unit.outputs.map((o) => {
        const name = (rules.rename ?? []).reduce((n, r) => n.replace(r.from, r.to), o.name);
        if (name !== o.name) renamed.push({ from: o.name, to: name });
        if (seen.has(name)) fail(source, name, "two tensors would get this name; adjust the rules.");
        seen.add(name);
        return { ...o, name };
      });
    }
    let copiedFiles: string[] = [];
    await writeDirectoryAtomic(output, async (dir) => {
      const shards = [...new Set(units.map((u) => u.shard))];
      const writers = new Map<string, SafetensorsWriter>();
      try {
        for (const shard of shards) {
          const metadata = ck.shards.find((s) => basename(s.path) === shard)?.metadata ?? {};
          const layouts = units.filter((u) => u.shard === shard).flatMap((u) => u.outputs);
          writers.set(shard, await SafetensorsWriter.create(join(dir, shard), layouts, metadata));
        }
        for (const unit of units) {
          const writer = writers.get(unit.shard) as SafetensorsWriter;
          if (unit.stream !== undefined) {
            const name = (unit.outputs[0] as TensorLayout).name;
            await unit.stream(async (bytes) => {
              stopHere();
              await writer.write(name, bytes);
            });
            continue;
          }
          stopHere();
          const parts = await unit.produce();
          for (const [k, part] of parts.entries())
            await writer.write((unit.outputs[k] as TensorLayout).name, part);
        }
        for (const writer of writers.values()) await writer.finish();
        writers.clear();
      } finally {
        for (const writer of writers.values()) await writer.abort();
      }
      if (ck.indexed || ck.shards.length > 1) {
        const weightMap: Record<string, string> = {};
        let total = 0;
        for (const unit of units) {
          for (const o of unit.outputs) {
            weightMap[o.name] = unit.shard;
            total += o.shape.reduce((a, b) => a * b, 1) * dtypeBytes(o.dtype);
          }
        }
        await writeShardIndex(dir, Object.entries(weightMap), total);
      }
      const halves = units.some((u) => u.outputs.some((o) => o.name.endsWith(HALVES_BLOCKS_SUFFIX)));
      const marker = (config: Record<string, unknown>) => {
        config[MXFP4_LAYOUT_KEY] = MXFP4_HALVES;
      };
      // A lone file has no config.json to mark: the output gets one holding the marker alone.
      copiedFiles = halves
        ? await copyCompanions(source, dir, marker, { [MXFP4_LAYOUT_KEY]: MXFP4_HALVES })
        : await copyCompanions(source, dir);
      stopHere();
      await check?.(dir);
    });
    return { source, output, renamed, tensors: seen.size, copiedFiles };
  } finally {
    await ck.close();
  }
}
