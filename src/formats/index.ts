// The public face of formats/: dtypes and codecs, safetensors files and checkpoints, logical weights
// (MXFP4, FP8 with block scales, plain), conversions and verification.
export { bf16ToFloat32, float32ToBf16 } from "./bf16.js";
export {
  Checkpoint,
  type CheckpointTensor,
  INDEX_FILE,
  openCheckpoint,
  shardName,
  writeCheckpoint,
  writeShardIndex,
} from "./checkpoint.js";
export {
  type ConvertOptions,
  type ConvertProgress,
  type ConvertReport,
  type ConvertTarget,
  convertCheckpoint,
  DEFAULT_KEEP,
  type Fp8Block,
  type TensorConversion,
} from "./convert.js";
export { PIECE_BYTES } from "./convert-jobs.js";
export { decodeToFloat32 } from "./decode.js";
export {
  DTYPES,
  type Dtype,
  dtypeBytes,
  elementCount,
  isDtype,
  parseDtype,
  STORED_DTYPES,
  type StoredDtype,
} from "./dtypes.js";
export { decodeE8m0, E8M0_NAN, encodeE8m0Exponent } from "./e8m0.js";
export { floatToFp8Tile128 } from "./fp8-blockwise.js";
export { convertWeights, MXFP4_LAYOUTS, type Mxfp4Layout } from "./halves-convert.js";
export { type InspectReport, inspectCheckpoint } from "./inspect.js";
export { regroupGateUp, splitFirstAxis, stackFirstAxis, swapNibbles, transposeLast2 } from "./layout-ops.js";
export {
  detectLogicalTensors,
  FP8_BLOCKS,
  findLogical,
  type LogicalKind,
  type LogicalTensor,
  logicalRows,
  readLogicalRows,
  readLogicalTensor,
  scaleGridShape,
} from "./logical.js";
export {
  BFLOAT16,
  decodeMinifloat,
  decodeTable,
  type EncodeOptions,
  encodeMinifloat,
  FLOAT16,
  FP4_E2M1,
  FP8_E4M3FN,
  FP8_E5M2,
  type MinifloatFormat,
  maxFinite,
} from "./minifloat.js";
export {
  dequantizeMxfp4,
  encodeMxfp4,
  MXFP4_BLOCK,
  MXFP4_BLOCK_BYTES,
  type Mxfp4Tensor,
  mxfp4LogicalShape,
} from "./mxfp4.js";
export {
  fromHalvesInPlace,
  HALVES_BLOCKS_SUFFIX,
  MXFP4_HALVES,
  MXFP4_LAYOUT_KEY,
  toHalves,
  toHalvesInto,
} from "./mxfp4-halves.js";
export { mxfp4ToFp8Block32, mxfp4ToFp8Tile128, TILE, type TileReport } from "./mxfp4-to-fp8.js";
export {
  isPackedDirectory,
  openPacked,
  PACKED_MANIFEST,
  type PackedCheckpoint,
  type PackedManifest,
  type PackedTensor,
  rankFileName,
} from "./packed-manifest.js";
export { readPackedTensors } from "./packed-read.js";
export { verifyPacked } from "./packed-verify.js";
export { type PackReport, packCheckpoint } from "./packed-write.js";
export { type RelayoutReport, type RelayoutRules, relayoutCheckpoint } from "./relayout.js";
export {
  encodeSafetensorsHeader,
  MAX_TENSORS,
  parseSafetensorsHeader,
  type SafetensorsHeader,
  type TensorInfo,
  type TensorLayout,
} from "./safetensors-header.js";
export { openSafetensors, SafetensorsFile } from "./safetensors-reader.js";
export { SafetensorsWriter, type TensorData, writeAtSync, writeSafetensors } from "./safetensors-writer.js";
export {
  type ComparisonReport,
  compareCheckpointValues,
  type ValueComparison,
  type VerifyReport,
  verifyCheckpoints,
  type WeightComparison,
} from "./verify.js";
export { defaultWorkers } from "./worker-pool.js";
