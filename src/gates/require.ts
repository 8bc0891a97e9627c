import type { ProbedEndpoint } from "../client/index.js";
import { BringupError } from "../common/errors.js";
import type { GateContext, GateInputs } from "./gate.js";

export function requireEndpoint(context: GateContext): ProbedEndpoint {
  if (context.endpoint) return context.endpoint;
  if (context.endpointError) throw context.endpointError;
  throw new BringupError("GATE_NEEDS_ENDPOINT", "this gate runs against a server: pass --endpoint URL.");
}

export function requireCorpus(context: GateContext): string {
  if (context.corpus !== undefined && context.corpus.length > 0) return context.corpus;
  throw new BringupError(
    "GATE_NEEDS_CORPUS",
    "this gate needs the text corpus; reinstall bringup so corpus/ is present.",
  );
}

/** The reference endpoint when one was asked for; its probe error when it could not be reached. */
export function optionalReference(context: GateContext): ProbedEndpoint | undefined {
  if (context.referenceError) throw context.referenceError;
  return context.reference;
}

/** The inputs a context supplies (a reference that failed its probe counts as supplied). */
export function inputsOf(context: GateContext): GateInputs {
  return {
    reference: context.reference !== undefined || context.referenceError !== undefined,
    referenceValue: context.referenceValue !== undefined,
    fullAttentionCapacity: context.fullAttentionCapacity !== undefined,
    goldenFile: context.goldenFile !== undefined,
  };
}
