import type { WeightsBitIdentityGate } from "../catalog/index.js";
import { BringupError } from "../common/errors.js";
import { isPackedDirectory, verifyCheckpoints, verifyPacked } from "../formats/index.js";
import type { Gate, GateOutcome } from "./gate.js";

type Spec = typeof WeightsBitIdentityGate._output;

/** A converted checkpoint against its source, value for value (formats' verifyCheckpoints). */
export const weightsBitIdentityGate: Gate<Spec> = {
  kind: "weights-bit-identity",
  needsEndpoint: false,
  async run(spec, context) {
    const { sourceCheckpoint: source, convertedCheckpoint: converted } = context;
    if (source === undefined || converted === undefined) {
      throw new BringupError(
        "GATE_NEEDS_CHECKPOINTS",
        `the weights gate (${spec.conversion}) compares a conversion with its source: pass --source DIR and --converted DIR.`,
      );
    }
    // A packed directory (`weights pack`) is proven against its source rank by rank, by value.
    const report = (await isPackedDirectory(converted))
      ? await verifyPacked(source, converted)
      : await verifyCheckpoints(source, converted);
    const differing = report.weights.filter((w) => !w.valuesIdentical);
    const missing = report.onlyInA.length + report.onlyInB.length;
    const names = [...differing.map((w) => w.name), ...report.onlyInA, ...report.onlyInB];
    return {
      kind: "weights-bit-identity",
      status: report.ok ? "passed" : "failed",
      summary: report.ok
        ? `${report.weights.length} weights identical after ${spec.conversion}`
        : `${differing.length} of ${report.weights.length} weights differ, ${missing} missing on one side (${names.slice(0, 3).join(", ")}${names.length > 3 ? ", ..." : ""})`,
      metric: "weights_differing",
      label: `weights differing after ${spec.conversion}`,
      unit: "count",
      value: differing.length + missing,
      arms: [
        {
          name: converted,
          samples: report.weights.map((w) => (w.valuesIdentical ? 0 : 1)),
          reference: false,
        },
      ],
      measured: {
        weights: report.weights.length,
        differing: differing.length,
        only_in_source: report.onlyInA,
        only_in_converted: report.onlyInB,
      },
    } satisfies GateOutcome;
  },
};
