import type { Gate as GateSpec } from "../catalog/index.js";
import { type BringupError, isBringupError } from "../common/errors.js";
import { bitIdenticalDecodeGate } from "./bit-identical-decode.js";
import { deviceLogprobsGate } from "./device-logprobs.js";
import type { Gate, GateContext, GateInputs, GateKind, GateOutcome } from "./gate.js";
import { kvCapacityGate } from "./kv-capacity.js";
import { needlesGate } from "./needles.js";
import { perplexityGate } from "./perplexity.js";
import { inputsOf } from "./require.js";
import { weightsBitIdentityGate } from "./weights-bit-identity.js";

const GATES: { [K in GateKind]: Gate<Extract<GateSpec, { kind: K }>> } = {
  perplexity: perplexityGate,
  needles: needlesGate,
  "bit-identical-decode": bitIdenticalDecodeGate,
  "kv-capacity": kvCapacityGate,
  "weights-bit-identity": weightsBitIdentityGate,
  "device-logprobs": deviceLogprobsGate,
};

/** The gates of `specs` that measure a server, so a command can ask for --endpoint before running any. */
export function gatesNeedingEndpoint(specs: readonly GateSpec[]): GateSpec[] {
  return specs.filter((spec) => GATES[spec.kind].needsEndpoint);
}

/**
 * The baselines (reference endpoint or value, golden file) that `specs` need and `given` lacks, one
 * error per gate, so a command can stop before any work.
 */
export function missingGateInputs(specs: readonly GateSpec[], given: GateInputs): BringupError[] {
  return specs.flatMap((spec) => (GATES[spec.kind] as Gate<GateSpec>).missingInput?.(spec, given) ?? []);
}

/** Runs one gate; a BringupError (a missing piece, a misbehaving endpoint) makes it not-run, never passed. */
export async function runGate(spec: GateSpec, context: GateContext): Promise<GateOutcome> {
  const gate = GATES[spec.kind] as Gate<GateSpec>;
  try {
    const missing = gate.missingInput?.(spec, inputsOf(context));
    if (missing) throw missing;
    return await gate.run(spec, context);
  } catch (error) {
    if (!isBringupError(error)) throw error;
    return { kind: spec.kind, status: "not-run", summary: error.message, code: error.code };
  }
}

/** Runs the gates in order (one at a time, so they do not disturb each other's measurements). */
export async function runGates(specs: readonly GateSpec[], context: GateContext): Promise<GateOutcome[]> {
  const outcomes: GateOutcome[] = [];
  for (const spec of specs) outcomes.push(await runGate(spec, context));
  return outcomes;
}

/** True when every gate ran and passed. */
export function allPassed(outcomes: readonly GateOutcome[]): boolean {
  return outcomes.length > 0 && outcomes.every((o) => o.status === "passed");
}
