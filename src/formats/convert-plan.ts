import { basename } from "node:path";
import { BringupError } from "../common/errors.js";
import type { Checkpoint, CheckpointTensor } from "./checkpoint.js";
import { isTiled, type JobOp, rowRanges, sourceRowBytes } from "./convert-jobs.js";
import { type Dtype, dtypeBytes, elementCount } from "./dtypes.js";
import {
  FP8_BLOCKS,
  type LogicalTensor,
  logicalRows,
  scaleGridShape,
  shortRows,
  stackedName,
} from "./logical.js";
import { MXFP4_BLOCK, MXFP4_BLOCK_BYTES } from "./mxfp4.js";
import { TILE } from "./mxfp4-to-fp8.js";
import type { WrittenFormat } from "./quantization-config.js";
import type { TensorLayout } from "./safetensors-header.js";

export type ConvertTarget = "bf16" | "fp8" | "mxfp4";
export type Fp8Block = "tile128" | "block32";

/** The options of a conversion that choose its plans (see ConvertOptions). */
export interface PlanOptions {
  readonly to: ConvertTarget;
  readonly fp8Block?: Fp8Block;
  readonly allowInexact?: boolean;
  readonly include?: RegExp;
  readonly allowNonFinite?: boolean;
}

/** What converting one weight (or copying one stored part of it) takes and writes. */
export interface Plan {
  /** The logical weight this plan writes (or a stored part of, when copying). */
  readonly weight: string;
  readonly tensor: LogicalTensor;
  readonly op: JobOp;
  readonly outputs: readonly TensorLayout[];
  /** The file name of the source shard, and of the output shard it is written to. */
  readonly shard: string;
  readonly from: string;
  readonly to: string;
  /** How the weight is stored once written. */
  readonly written: WrittenFormat;
}

/**
 * A stored tensor copied as it is. A checkpoint may hold hundreds of thousands, so a copy holds only
 * what is its own (every string and format shared with others) and makes the rest when asked.
 */
class CopyPlan implements Plan {
  constructor(
    readonly weight: string,
    readonly stored: CheckpointTensor,
    readonly shard: string,
    readonly from: string,
    readonly written: WrittenFormat,
  ) {}

  get to(): string {
    return this.from;
  }

  /** A column of elements, so even a huge 1-D tensor streams in bounded chunks. */
  get tensor(): LogicalTensor {
    const { name, dtype, shape } = this.stored;
    return { kind: "plain", name, shape: [elementCount(shape), 1], dtype, parts: [name] };
  }

  get op(): JobOp {
    return { op: "copy", stored: this.stored.name, rowBytes: dtypeBytes(this.stored.dtype) };
  }

  get outputs(): readonly TensorLayout[] {
    return [this.stored];
  }
}

const FLOATS = new Set<Dtype>(["F32", "F16", "BF16", "F64"]);

function describe(tensor: LogicalTensor): string {
  if (tensor.kind === "plain") return tensor.dtype;
  if (tensor.kind === "fp8") return `fp8-e4m3 [${tensor.block.join("x")}]`;
  return "mxfp4";
}

/** An FP8 weight of this shape written with scale blocks `block`, and every layout its scales fit. */
function fp8Written(
  shape: readonly number[],
  block: readonly [number, number],
  powerOfTwoScales: boolean,
): WrittenFormat {
  const grid = scaleGridShape(shape, block).join();
  const blocks = FP8_BLOCKS.filter((b) => scaleGridShape(shape, b).join() === grid);
  return { kind: "fp8", blocks, powerOfTwoScales };
}

/** What a plan to MXFP4 writes: `W_blocks` and `W_scales`. */
function toMxfp4(tensor: LogicalTensor, op: "fp8-to-mxfp4" | "float-to-mxfp4") {
  const cols = tensor.shape.at(-1) as number;
  const groups = [...tensor.shape.slice(0, -1), cols / MXFP4_BLOCK];
  const name = stackedName(tensor.name, tensor.shape, "mxfp4");
  return {
    op: { op },
    outputs: [
      { name: `${name}_blocks`, dtype: "U8" as const, shape: [...groups, MXFP4_BLOCK_BYTES] },
      { name: `${name}_scales`, dtype: "U8" as const, shape: groups },
    ],
    to: "mxfp4",
    written: { kind: "mxfp4" as const },
  };
}

/** Every weight's plans, in the checkpoint's order: what each converts, or the parts it copies. */
export function planTensors(
  ck: Checkpoint,
  logical: Iterable<LogicalTensor>,
  options: PlanOptions,
  source: { kept: (weight: string) => boolean; powerOfTwoScales: boolean },
  exclude: RegExp,
): Plan[] {
  const plans: Plan[] = [];
  // One string or format object each, however many tensors share it.
  const shards = new Map<string, string>();
  const shardOf = (t: CheckpointTensor) => {
    const shard = shards.get(t.file) ?? basename(t.file);
    shards.set(t.file, shard);
    return shard;
  };
  const descriptions = new Map<string, string>();
  const plainFormats = new Map<Dtype, WrittenFormat>();
  /** How a weight is stored when copied as it is; an FP8 weight's scales keep the source's scale_fmt. */
  const formatOf = (tensor: LogicalTensor): WrittenFormat => {
    if (tensor.kind === "fp8") return fp8Written(tensor.shape, tensor.block, source.powerOfTwoScales);
    if (tensor.kind === "mxfp4") return { kind: "mxfp4" };
    const format = plainFormats.get(tensor.dtype) ?? { kind: "plain", dtype: tensor.dtype };
    plainFormats.set(tensor.dtype, format);
    return format;
  };
  for (const tensor of logical) {
    const first = ck.tensor(tensor.parts[0]);
    const shard = shardOf(first);
    const from = descriptions.get(describe(tensor)) ?? describe(tensor);
    descriptions.set(from, from);
    const base = { weight: tensor.name, tensor, shard, from };
    const subject = () => `${first.file}#${tensor.name}`;
    const quantizable =
      tensor.kind === "plain" &&
      FLOATS.has(tensor.dtype) &&
      tensor.shape.length >= 2 &&
      options.include?.test(tensor.name) === true &&
      !exclude.test(tensor.name) &&
      !source.kept(tensor.name);
    if (quantizable && stackedName(tensor.name, tensor.shape, "other") !== tensor.name) {
      throw new BringupError(
        "STACKED_LAYOUT_UNKNOWN",
        `${subject()}: a stacked weight [${tensor.shape.join(", ")}] whose name does not say its layout: Hugging Face's bf16 gpt-oss stores experts as [experts, in, out] under this name, MXFP4 and FP8 as [experts, out, in], so quantized as it is it could be read transposed. If its matrices are [out, in], name it ${tensor.name}.weight (weights relayout --rename); if [in, out], transpose them first (--transpose); or leave it out of --include.`,
        { subject: subject() },
      );
    }
    const [rows, cols] = [tensor.shape.at(-2) ?? 1, tensor.shape.at(-1) ?? 1];
    const lead = tensor.shape.slice(0, -2);
    // Ops that work element by element (or block by block along the elements) read short rows.
    const streamed = () => shortRows([tensor])[0] as LogicalTensor;
    // What an MXFP4 weight is called once it is not (see stackedName).
    const renamed = tensor.kind === "mxfp4" ? stackedName(tensor.name, tensor.shape, "other") : tensor.name;
    if (options.to === "bf16" && tensor.kind !== "plain") {
      plans.push({
        ...base,
        tensor: streamed(),
        op: { op: "to-bf16", allowInexact: options.allowInexact === true },
        outputs: [{ name: renamed, dtype: "BF16", shape: tensor.shape }],
        to: "BF16",
        written: { kind: "plain", dtype: "BF16" },
      });
    } else if (options.to === "fp8" && tensor.kind === "mxfp4") {
      if (tensor.shape.length < 2) {
        throw new BringupError(
          "NOT_REPRESENTABLE",
          `${subject()}: a 1-D MXFP4 weight has no rows for FP8 block scales; convert the checkpoint --to bf16, or keep it MXFP4.`,
          { subject: subject() },
        );
      }
      const block = options.fp8Block ?? "tile128";
      const grid =
        block === "tile128"
          ? [...lead, Math.ceil(rows / TILE), Math.ceil(cols / TILE)]
          : [...lead, rows, cols / MXFP4_BLOCK];
      plans.push({
        ...base,
        ...(block === "block32" ? { tensor: streamed() } : {}),
        op: { op: "mxfp4-to-fp8", block, allowInexact: options.allowInexact === true },
        outputs: [
          { name: renamed, dtype: "F8_E4M3", shape: tensor.shape },
          { name: `${renamed}_scale_inv`, dtype: "F32", shape: grid },
        ],
        to: `fp8-e4m3 [${block === "tile128" ? "128x128" : "1x32"}]`,
        written: fp8Written(tensor.shape, block === "tile128" ? [TILE, TILE] : [1, MXFP4_BLOCK], true),
      });
    } else if (options.to === "fp8" && quantizable) {
      plans.push({
        ...base,
        op: { op: "float-to-fp8", allowNonFinite: options.allowNonFinite === true },
        outputs: [
          { name: tensor.name, dtype: "F8_E4M3", shape: tensor.shape },
          {
            name: `${tensor.name}_scale_inv`,
            dtype: "F32",
            shape: scaleGridShape(tensor.shape, [TILE, TILE]),
          },
        ],
        to: "fp8-e4m3 [128x128]",
        written: fp8Written(tensor.shape, [TILE, TILE], false),
      });
    } else if (options.to === "mxfp4" && tensor.kind === "fp8") {
      if (cols % MXFP4_BLOCK !== 0) {
        throw new BringupError(
          "NOT_REPRESENTABLE",
          `${subject()}: ${cols} columns are not whole MXFP4 blocks of 32; keep the checkpoint FP8 or convert it --to bf16.`,
          { subject: subject() },
        );
      }
      plans.push({ ...base, tensor: streamed(), ...toMxfp4(tensor, "fp8-to-mxfp4") });
    } else if (options.to === "mxfp4" && quantizable && cols % MXFP4_BLOCK === 0) {
      plans.push({ ...base, ...toMxfp4(tensor, "float-to-mxfp4") });
    } else {
      const written = formatOf(tensor);
      for (const part of tensor.parts) {
        const stored = ck.tensor(part);
        plans.push(new CopyPlan(tensor.name, stored, shardOf(stored), from, written));
      }
    }
  }
  return plans;
}

/** A plan's jobs: row ranges of at most about `chunkBytes` of source; tiled ops get whole 128-row bands or whole matrices. */
export function* jobsOf(
  ck: Checkpoint,
  plans: Iterable<Plan>,
  chunkBytes: number,
): Generator<{
  plan: Plan;
  job: JobOp & { tensor: LogicalTensor; start: number; end: number };
  bytes: number;
}> {
  for (const plan of plans) {
    const [tensor, op] = [plan.tensor, plan.op];
    const rowBytes = sourceRowBytes(ck, tensor);
    const { rows } = logicalRows(tensor);
    for (const [start, end] of rowRanges(tensor, isTiled(op), rowBytes, chunkBytes, 0, rows))
      yield { plan, job: { ...op, tensor, start, end }, bytes: (end - start) * rowBytes };
  }
}

/** The config.json key that names the weights written under stackedName's `.weight` names. */
export const STACKED_WEIGHTS_KEY = "stacked_weights";

/**
 * What the output's config.json says of its stacked weights (see stackedName), or undefined where
 * it has none: their layout, and each one written under a `.weight` name, by this conversion from
 * MXFP4 or carried from a source whose config.json listed it.
 */
export function stackedWeights(
  plans: readonly Plan[],
  sourceConfig: Record<string, unknown> | undefined,
): Record<string, unknown> | undefined {
  const listed = (sourceConfig?.[STACKED_WEIGHTS_KEY] as { weights?: unknown } | undefined)?.weights;
  const carried = new Set(Array.isArray(listed) ? listed : []);
  const names = plans.flatMap((plan) =>
    plan.outputs
      .filter((o) => o.shape.length >= 3 && (carried.has(o.name) || o.name === `${plan.weight}.weight`))
      .map((o) => o.name),
  );
  return names.length === 0 ? undefined : { layout: "[count, out, in]", weights: names };
}

/** The plans that convert a weight, not copying it. */
export function converting(plans: readonly Plan[]): Plan[] {
  return plans.filter((plan) => !(plan instanceof CopyPlan));
}

/** Whether a plan quantizes a plain weight on request (lossy by design). */
export function quantizing(plan: Plan): boolean {
  return !(plan instanceof CopyPlan) && (plan.op.op === "float-to-fp8" || plan.op.op === "float-to-mxfp4");
}
