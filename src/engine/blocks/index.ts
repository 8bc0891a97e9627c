/** The blocks' math kernels on Float32Arrays, for the engine's layer blocks to compose. */
export { shortConv } from "./conv/short-conv.js";
export { kdaChunked } from "./linear-attention/kda-chunked.js";
export { kdaGate, L2_NORM_EPS, l2NormalizeHeads } from "./linear-attention/kda-gate.js";
export { type KdaInputs, kdaRecurrent, kdaRecurrentFused } from "./linear-attention/kda-recurrence.js";
export {
  collapseStreams,
  expandStreams,
  type HyperConnectionWeights,
  type HyperHeadWeights,
  hyperConnectionWeights,
  hyperHead,
  type MhcConfig,
  replicateToStreams,
  sinkhornProject,
} from "./residual/mhc.js";
