import type { Gate as GateSpec } from "../catalog/index.js";
import { probeEndpoint, type RequestOptions } from "../client/index.js";
import { type BringupError, isBringupError } from "../common/errors.js";
import type { GateContext, GateOutcome } from "./gate.js";
import { runGates } from "./run.js";

export interface GateSessionOptions
  extends Omit<GateContext, "endpoint" | "endpointError" | "reference" | "referenceError"> {
  readonly endpointUrl?: string;
  readonly referenceUrl?: string;
  readonly request?: RequestOptions;
}

/**
 * Probes the endpoint (and the reference, when given) once, then runs the gates in one session. An
 * endpoint that cannot be probed leaves the gates that need it not-run with the probe's error.
 */
export async function runGateSession(
  specs: readonly GateSpec[],
  options: GateSessionOptions,
): Promise<{ context: GateContext; outcomes: GateOutcome[] }> {
  const { endpointUrl, referenceUrl, request, ...rest } = options;
  const probe = async (url: string | undefined) => {
    if (url === undefined) return {};
    try {
      return { probed: await probeEndpoint(url, request) };
    } catch (error) {
      if (isBringupError(error)) return { error: error as BringupError };
      throw error;
    }
  };
  const target = await probe(endpointUrl);
  const reference = await probe(referenceUrl);
  const context: GateContext = {
    ...rest,
    ...(target.probed ? { endpoint: target.probed } : {}),
    ...(target.error ? { endpointError: target.error } : {}),
    ...(reference.probed ? { reference: reference.probed } : {}),
    ...(reference.error ? { referenceError: reference.error } : {}),
  };
  return { context, outcomes: await runGates(specs, context) };
}
