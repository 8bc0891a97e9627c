import { BringupError } from "../common/errors.js";
import { openCheckpoint } from "./checkpoint.js";
import {
  type ConvertOptions,
  type ConvertReport,
  convertCheckpoint,
  type TensorConversion,
} from "./convert.js";
import { detectLogicalTensors, formatName, type LogicalTensor } from "./logical.js";
import { MXFP4_HALVES } from "./mxfp4-halves.js";
import { relayoutCheckpoint } from "./relayout.js";
import { verifyCheckpoints } from "./verify.js";

/** The MXFP4 code orders `bringup weights convert --layout` writes: the public OCP order, or halves. */
export const MXFP4_LAYOUTS = ["ocp", "halves"] as const;
export type Mxfp4Layout = (typeof MXFP4_LAYOUTS)[number];

/**
 * `bringup weights convert`: convertCheckpoint, or with `layout: "halves"` (only `to: "mxfp4"`,
 * nothing quantized) the halves re-layout of an MXFP4 checkpoint.
 */
export async function convertWeights(
  source: string,
  output: string,
  options: ConvertOptions & { readonly layout?: Mxfp4Layout },
): Promise<ConvertReport> {
  const { layout, ...convert } = options;
  if (layout !== "halves") return convertCheckpoint(source, output, convert);
  if (options.to !== "mxfp4" || options.include !== undefined) {
    throw new BringupError(
      "BAD_OPTION",
      `layout halves re-lays out MXFP4 codes as they are: use it with --to mxfp4 and no --include (convert or quantize in a first run, then re-lay out).`,
    );
  }
  return convertToHalves(source, output, options);
}

type HalvesOptions = Pick<ConvertOptions, "verify" | "workers" | "signal">;

/**
 * `bringup weights convert --to mxfp4 --layout halves`: every MXFP4 weight's codes re-laid out in
 * halves order (mxfp4-halves.ts), scales and every other tensor copied, config.json marked. Lossless
 * by construction; with `verify` (the default) every weight of the output is decoded and compared
 * with the source's, value by value, before the output appears. Refused, naming the weight: stacked
 * experts that are not MXFP4 and a checkpoint with no MXFP4 weight at all.
 */
async function convertToHalves(
  source: string,
  output: string,
  options: HalvesOptions,
): Promise<ConvertReport> {
  const ck = await openCheckpoint(source);
  let weights: LogicalTensor[];
  let sourceBytes = 0;
  try {
    weights = detectLogicalTensors(ck.tensors);
    for (const t of ck.tensors) sourceBytes += t.byteLength;
  } finally {
    await ck.close();
  }
  if (!weights.some((w) => w.kind === "mxfp4")) {
    throw new BringupError(
      "RELAYOUT_INVALID",
      `${source}: no MXFP4 weight stored as W_blocks + W_scales (transformers' naming) to re-lay out in halves order; FP4 stored otherwise (DeepSeek's released per-expert w1.weight + .scale) is not re-laid out, so serve such a checkpoint as it is, or leave out --layout.`,
      { subject: source },
    );
  }
  const prove = async (dir: string) => {
    const report = await verifyCheckpoints(source, dir, {
      ...(options.workers !== undefined ? { workers: options.workers } : {}),
      ...(options.signal !== undefined ? { signal: options.signal } : {}),
    });
    if (report.ok) return;
    const weight =
      report.weights.find((w) => !w.valuesIdentical)?.name ?? report.onlyInA[0] ?? report.onlyInB[0];
    throw new BringupError(
      "CONVERSION_NOT_EXACT",
      `${output}: weight ${JSON.stringify(weight)} does not decode to the source's values after the halves re-layout; this is a bug, please report it. Nothing was written.`,
      { subject: `${output}#${weight}` },
    );
  };
  const done = await relayoutCheckpoint(
    source,
    output,
    { mxfp4Halves: /(?:)/ },
    {
      ...(options.verify === false ? {} : { check: prove }),
      ...(options.signal !== undefined ? { signal: options.signal } : {}),
    },
  );
  const tensors: TensorConversion[] = weights.map((w) => {
    const from = formatName(w);
    return {
      name: w.name,
      from,
      to: w.kind === "mxfp4" ? formatName({ ...w, order: MXFP4_HALVES }) : from,
      exact: true,
      quantized: false,
      ...(options.verify === false ? {} : { verified: true }),
    };
  });
  return {
    source,
    output,
    target: `mxfp4 (${MXFP4_HALVES} order)`,
    tensors,
    sourceBytes,
    outputBytes: sourceBytes,
    copiedFiles: done.copiedFiles,
  };
}
