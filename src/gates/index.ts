/**
 * Correctness gates, one file per kind behind one `Gate` interface, run against any
 * OpenAI-compatible endpoint (probed by src/client): perplexity, needles, bit-identical decode,
 * KV capacity, weights bit-identity. A gate that cannot run is `not-run` with the reason, never passed.
 *
 *   const endpoint = await probeEndpoint(url);
 *   const outcomes = await runGates(manifest.gates, { endpoint, corpus: await readCorpus() });
 *   await appendGateRecords(resultsDir, port, manifest.gates.map((spec, i) => ({ spec, outcome: outcomes[i] })), ctx);
 */
export { bitIdenticalDecodeGate } from "./bit-identical-decode.js";
export { DECODE_TOKENS, type Decode, decodeRequests, type SamplingMode } from "./decodes.js";
export { DEVICE_WINDOW_TOKENS, DEVICE_WINDOWS, deviceLogprobsGate, greedyClose } from "./device-logprobs.js";
export type {
  Gate,
  GateArm,
  GateContext,
  GateInputs,
  GateKind,
  GateOutcome,
  GateStatus,
  NeedleRow,
} from "./gate.js";
export { type GoldenFile, readGoldenDecodes, writeGoldenDecodes } from "./golden.js";
export { kvCapacityGate } from "./kv-capacity.js";
export { needle, needleDepths, needlesGate } from "./needles.js";
export { perplexityGate } from "./perplexity.js";
export { appendGateRecords, gateRecord } from "./record.js";
export { allPassed, gatesNeedingEndpoint, missingGateInputs, runGate, runGates } from "./run.js";
export { type GateSessionOptions, runGateSession } from "./session.js";
export { weightsBitIdentityGate } from "./weights-bit-identity.js";
