import type { KvCapacityGate } from "../catalog/index.js";
import type { ProbedEndpoint } from "../client/index.js";
import { BringupError } from "../common/errors.js";
import type { Gate, GateOutcome } from "./gate.js";
import { optionalReference, requireEndpoint } from "./require.js";

type Spec = typeof KvCapacityGate._output;

/**
 * The endpoint's KV token capacity (its /metrics) over that of a baseline build with the same
 * memory: a reference endpoint serving it (a full-attention layout, or the same layout keeping
 * more per token, such as per-head K/V against a latent cache), or a stated full-attention
 * capacity. Passes when the ratio is within `tolerance` (relative) of `expected_ratio`, and of the
 * builds' ratio by construction when the caller knows it.
 */
export const kvCapacityGate: Gate<Spec> = {
  kind: "kv-capacity",
  needsEndpoint: true,
  missingInput(_spec, given) {
    if (given.reference || given.fullAttentionCapacity) return undefined;
    return new BringupError(
      "GATE_NEEDS_REFERENCE",
      "the KV capacity gate compares with a full-attention layout: pass --reference URL (a full-attention build) or --full-attention-capacity TOKENS.",
    );
  },
  async run(spec, context) {
    const target = requireEndpoint(context);
    const reference = optionalReference(context);
    const capacity = capacityOf(target);
    let full: number;
    if (reference !== undefined) full = capacityOf(reference);
    else full = context.fullAttentionCapacity as number;
    const ratio = capacity / full;
    const off = (expected: number) => Math.abs(ratio - expected) / expected;
    const theory = context.theoreticalRatio;
    const passed =
      off(spec.expected_ratio) <= spec.tolerance && (theory === undefined || off(theory) <= spec.tolerance);
    const within = `within ${(spec.tolerance * 100).toFixed(1)}%`;
    return {
      kind: "kv-capacity",
      status: passed ? "passed" : "failed",
      summary: `KV capacity ${capacity} tokens = ${ratio.toFixed(3)}x the baseline's ${full}; expected ${spec.expected_ratio}x ${within}${theory === undefined ? "" : ` and the builds' ${theory.toFixed(3)}x by construction ${within}`}`,
      metric: "kv_token_capacity",
      label: "KV cache token capacity",
      unit: "tokens",
      value: capacity,
      arms: [
        { name: target.endpoint.url, samples: [capacity], reference: false },
        ...(reference ? [{ name: reference.endpoint.url, samples: [full], reference: true }] : []),
      ],
      measured: {
        capacity,
        full_attention_capacity: full,
        ratio,
        expected_ratio: spec.expected_ratio,
        ...(theory === undefined ? {} : { theoretical_ratio: theory }),
      },
    } satisfies GateOutcome;
  },
};

function capacityOf(target: ProbedEndpoint): number {
  if (target.probe.kvTokenCapacity !== undefined) return target.probe.kvTokenCapacity;
  throw new BringupError(
    "ENDPOINT_LACKS_KV_CAPACITY",
    `${target.endpoint.url}: ${target.probe.metricsProblem}`,
    {
      subject: target.endpoint.url,
    },
  );
}
