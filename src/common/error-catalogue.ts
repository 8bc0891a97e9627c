/**
 * Every error code bringup uses, declared once with its category. The category decides the HTTP
 * status the server answers with and the exit code the CLI ends with, so a code means the same thing
 * everywhere; an entry overrides the status only where HTTP has a more exact word for it, and names
 * the OpenAI `code` a request error reports. `BringupError` accepts only the codes declared here.
 */

/** The HTTP statuses a catalogued error can map to. */
export type ErrorHttpStatus = 400 | 408 | 500 | 502 | 503;

/** What kind of failure a code is: who has to act, and how the server and the CLI report it. */
export const ERROR_CATEGORIES = {
  /** A flag, argument or name the person typed is wrong; fix the command line. */
  usage: { status: 400, exit: 2 },
  /** An HTTP request to our server is wrong; the client fixes the request. */
  request: { status: 400, exit: 2 },
  /** A file or directory given to bringup (checkpoint, config, records, dataset, manifest) is wrong or missing. */
  input: { status: 500, exit: 2 },
  /** The endpoint under test is down, slow, or lacks what the command needs. */
  endpoint: { status: 502, exit: 2 },
  /** The machine stopped the work: filesystem, disk, open files, threads, memory, a port in use. */
  environment: { status: 500, exit: 2 },
  /** The server is shutting down; retry against a running one. */
  unavailable: { status: 503, exit: 2 },
  /** A check ran and found a difference (a conversion that is not exact). */
  check: { status: 500, exit: 1 },
  /** A gate or A/B could not run in this setup; reported in a summary row, not thrown. */
  "not-run": { status: 500, exit: 1 },
  /** The person stopped the work (Ctrl-C or SIGTERM). */
  interrupted: { status: 500, exit: 130 },
  /** bringup broke its own invariant: a bug to report. */
  internal: { status: 500, exit: 2 },
} as const satisfies Record<string, { status: ErrorHttpStatus; exit: number }>;

export type ErrorCategory = keyof typeof ERROR_CATEGORIES;

interface CatalogueEntry {
  readonly category: ErrorCategory;
  /** An HTTP status more exact than the category's. */
  readonly status?: ErrorHttpStatus;
  /** The OpenAI error `code` a request error reports (otherwise the code in lower case). */
  readonly openai?: string;
}

export const ERROR_CATALOGUE = {
  // common: files and outputs
  FS_DISK_FULL: { category: "environment" },
  FS_EXISTS: { category: "environment" },
  FS_IS_DIRECTORY: { category: "usage" },
  FS_NOT_DIRECTORY: { category: "usage" },
  FS_NOT_FOUND: { category: "input" },
  FS_PERMISSION_DENIED: { category: "environment" },
  FS_READ_ONLY: { category: "environment" },
  FS_TOO_MANY_FILES: { category: "environment" },
  OUTPUT_DISK_FULL: { category: "environment" },
  OUTPUT_EXISTS: { category: "usage" },
  OUTPUT_NOT_WRITABLE: { category: "environment" },
  OUTPUT_NO_SPACE: { category: "environment" },
  TOO_MANY_OPEN_FILES: { category: "environment" },
  INTERRUPTED: { category: "interrupted" },

  // catalog: ports and their manifests
  CATALOG_NOT_FOUND: { category: "usage" },
  PORT_BROKEN: { category: "input" },
  PORT_EXISTS: { category: "usage" },
  PORT_ID_INVALID: { category: "usage" },
  PORT_NOT_FOUND: { category: "usage" },
  PORT_UNKNOWN: { category: "usage" },
  SCAFFOLD_INVALID: { category: "usage" },

  // formats: dtypes, safetensors, conversions, re-layouts
  BAD_CONFIG: { category: "input" },
  BAD_INDEX: { category: "input" },
  BAD_OPTION: { category: "usage" },
  BAD_RANGE: { category: "input" },
  BAD_TENSOR_BYTES: { category: "input" },
  CODEC_NAN: { category: "input" },
  CONVERSION_NOT_EXACT: { category: "check" },
  CONVERT_INTERNAL: { category: "internal" },
  DUPLICATE_TENSOR: { category: "input" },
  FILE_NOT_FOUND: { category: "input" },
  FILE_NOT_READABLE: { category: "environment" },
  FILE_UNREADABLE: { category: "environment" },
  FILE_TOO_LARGE: { category: "input" },
  FORMATS_KERNELS_NOT_BUILT: { category: "environment" },
  INDEX_DISAGREES: { category: "input" },
  INEXACT_CONVERSION: { category: "check" },
  MIXED_FP8_BLOCKS: { category: "input" },
  MIXED_QUANTIZATION: { category: "input" },
  MXFP4_BAD_SHAPE: { category: "input" },
  MXFP4_NAN_SCALE: { category: "input" },
  MXFP4_NOT_FINITE: { category: "input" },
  MXFP4_SCALES_MISSING: { category: "input" },
  MXFP4_BAD_DTYPE: { category: "input" },
  MXFP4_BLOCKS_MISSING: { category: "input" },
  MXFP4_NAME_CLASH: { category: "input" },
  STACKED_LAYOUT_UNKNOWN: { category: "input" },
  NO_WEIGHTS: { category: "input" },
  PACKED_CHECKSUM_MISMATCH: { category: "input" },
  PACKED_DTYPE: { category: "input" },
  PACKED_FILE_MISSING: { category: "input" },
  PACKED_FILE_TRUNCATED: { category: "input" },
  PACKED_MANIFEST_INVALID: { category: "input" },
  PACKED_RANKS_INDIVISIBLE: { category: "usage" },
  NOT_FINITE: { category: "input" },
  NOT_REPRESENTABLE: { category: "input" },
  RELAYOUT_BAD_SHAPE: { category: "input" },
  RELAYOUT_INVALID: { category: "usage" },
  SAFETENSORS_BAD_HEADER: { category: "input" },
  SAFETENSORS_BAD_NAME: { category: "input" },
  SAFETENSORS_GAP: { category: "input" },
  SAFETENSORS_HEADER_PAST_END: { category: "input" },
  SAFETENSORS_OUT_OF_RANGE: { category: "input" },
  SAFETENSORS_OVERLAP: { category: "input" },
  SAFETENSORS_SHAPE_MISMATCH: { category: "internal" },
  SAFETENSORS_TRAILING_BYTES: { category: "input" },
  SAFETENSORS_TRUNCATED: { category: "input" },
  SAFETENSORS_UNKNOWN_DTYPE: { category: "input" },
  SAFETENSORS_TOO_MANY_TENSORS: { category: "input" },
  SAFETENSORS_OVER_LIMIT: { category: "input" },
  SHARD_MISSING: { category: "input" },
  TENSOR_MISSING: { category: "input" },
  TENSOR_NOT_FOUND: { category: "input" },
  UNKNOWN_DTYPE: { category: "input" },
  WORKER_FAILED: { category: "internal" },
  WRITE_INCOMPLETE: { category: "environment" },
  WRITE_LAYOUT: { category: "internal" },

  // engine: models, loading, tokenizer, cache, kernels
  BPE_VOCAB_TOO_SMALL: { category: "input" },
  COMPRESS_RATIO_INVALID: { category: "input" },
  CORPUS_MISSING: { category: "input" },
  ENGINE_CLOSED: { category: "unavailable" },
  ENGINE_KERNELS_NOT_BUILT: { category: "environment" },
  ENGINE_KV_NOT_SHARED: { category: "internal" },
  ENGINE_OPTIONS_INVALID: { category: "usage" },
  ENGINE_SHAPE: { category: "internal" },
  ENGINE_THREADS: { category: "environment" },
  ENGINE_WASM_MEMORY_FULL: { category: "environment" },
  ENGINE_WEIGHT_NOT_SHARED: { category: "internal" },
  ENGINE_WORKER_FAILED: { category: "internal" },
  KERNEL_SHAPE: { category: "internal" },
  KV_BUDGET_TOO_SMALL: { category: "usage" },
  KV_EXHAUSTED: { category: "internal" },
  KV_RATIO_INVALID: { category: "usage" },
  LOGPROB_NOT_COMPUTED: { category: "internal" },
  MODEL_CONFIG_INVALID: { category: "input" },
  MODEL_FILE_INVALID: { category: "input" },
  MODEL_FILE_MISSING: { category: "input" },
  MODEL_TOKENIZER_MISMATCH: { category: "input" },
  MODEL_WEIGHTS_INVALID: { category: "input" },
  MODEL_WEIGHTS_MISMATCH: { category: "input" },
  MODEL_WEIGHT_DTYPE: { category: "input" },
  MODEL_WEIGHT_MISSING: { category: "input" },
  MODEL_MXFP4_LAYOUT_UNKNOWN: { category: "input" },
  RETRIEVAL_CONFIG_INVALID: { category: "input" },
  SLIDING_WINDOW_INVALID: { category: "input" },
  SPECULATIVE_UNAVAILABLE: { category: "usage" },
  STATE_STORAGE_MISMATCH: { category: "internal" },
  TINY_SIZE_MISSING: { category: "usage" },
  TINY_TENSOR_RELAID: { category: "internal" },
  TINY_SIZE_UNKNOWN: { category: "usage" },
  TOKENIZER_INVALID: { category: "input" },
  WEIGHT_LAYOUT_CONFLICT: { category: "internal" },
  WEIGHT_SHAPE: { category: "internal" },

  // engine and server: what a request can get wrong
  CHAT_TEMPLATE_FAILED: { category: "request", openai: "chat_template_failed" },
  CHAT_TEMPLATE_INVALID: { category: "request", openai: "chat_template_invalid" },
  CLIENT_TOO_SLOW: { category: "request", status: 408, openai: "client_too_slow" },
  CONTEXT_TOO_LONG: { category: "request", openai: "context_length_exceeded" },
  INVALID_LOGPROBS: { category: "request", openai: "invalid_value" },
  INVALID_MAX_TOKENS: { category: "request", openai: "invalid_value" },
  INVALID_SAMPLING_PARAMS: { category: "request", openai: "invalid_value" },
  KV_CAPACITY_EXCEEDED: { category: "request", openai: "context_length_exceeded" },
  NO_CHAT_TEMPLATE: { category: "request", openai: "chat_template_missing" },
  PROMPT_EMPTY: { category: "request", openai: "invalid_prompt" },
  TOKEN_OUT_OF_RANGE: { category: "request", openai: "invalid_prompt" },

  // server
  ENGINE_THREAD_FAILED: { category: "internal" },
  SERVE_LISTEN_FAILED: { category: "environment" },
  SERVER_SHUTTING_DOWN: { category: "unavailable", openai: "server_shutting_down" },

  // client: the endpoint under test
  ENDPOINT_HTTP_ERROR: { category: "endpoint" },
  ENDPOINT_LACKS_KV_CAPACITY: { category: "endpoint" },
  ENDPOINT_LACKS_LOGPROBS: { category: "endpoint" },
  ENDPOINT_LACKS_PROMPT_LOGPROBS: { category: "endpoint" },
  ENDPOINT_LACKS_TOKENIZER: { category: "endpoint" },
  ENDPOINT_MALFORMED_JSON: { category: "endpoint" },
  ENDPOINT_RESPONSE_INVALID: { category: "endpoint" },
  ENDPOINT_TIMEOUT: { category: "endpoint" },
  ENDPOINT_UNREACHABLE: { category: "endpoint" },
  ENDPOINT_URL_INVALID: { category: "usage" },
  SCORE_TOO_SHORT: { category: "endpoint" },
  SSE_ERROR_EVENT: { category: "endpoint" },
  SSE_MALFORMED: { category: "endpoint" },
  SSE_TRUNCATED: { category: "endpoint" },
  TOKENIZER_MISMATCH: { category: "endpoint" },

  // gates
  CONTEXT_BEYOND_ENDPOINT: { category: "endpoint" },
  CONTEXT_TOO_SHORT: { category: "usage" },
  CORPUS_TOO_SHORT: { category: "input" },
  GATE_NEEDS_CHECKPOINTS: { category: "usage" },
  GATE_NEEDS_CORPUS: { category: "usage" },
  GATE_NEEDS_ENDPOINT: { category: "usage" },
  GATE_NEEDS_GOLDEN: { category: "usage" },
  GATE_NEEDS_REFERENCE: { category: "usage" },
  GATE_SPEC_INVALID: { category: "input" },
  GOLDEN_INVALID: { category: "input" },
  GOLDEN_MISMATCHED_REQUESTS: { category: "input" },
  GOLDEN_MISSING: { category: "input" },
  NO_GATES: { category: "usage" },

  // bench
  BENCH_ARMS_SAME_NAME: { category: "usage" },
  BENCH_BLOCKS_INVALID: { category: "usage" },
  BENCH_BURSTINESS_INVALID: { category: "usage" },
  BENCH_CHAT_NEEDS_TEXT: { category: "usage" },
  BENCH_CONCURRENCY_INVALID: { category: "usage" },
  BENCH_DATASET_INVALID: { category: "input" },
  BENCH_DATASET_UNREADABLE: { category: "input" },
  BENCH_ID_INVALID: { category: "usage" },
  BENCH_INTERNAL: { category: "internal" },
  BENCH_INTERRUPTED: { category: "interrupted" },
  BENCH_METRIC_UNKNOWN: { category: "usage" },
  BENCH_NO_REQUESTS: { category: "endpoint" },
  BENCH_PERCENTILE: { category: "internal" },
  BENCH_RATE_INVALID: { category: "usage" },
  BENCH_RATIOS_INVALID: { category: "internal" },
  BENCH_REQUEST_TIMEOUT: { category: "endpoint" },
  BENCH_SWITCH_FAILED: { category: "endpoint" },
  BENCH_SWITCH_NOT_READY: { category: "endpoint" },
  BENCH_TRIAL_FAILED: { category: "endpoint" },
  BENCH_WARMUPS_INVALID: { category: "usage" },
  BENCH_WORKLOAD_INVALID: { category: "usage" },
  CHAIN_METRIC_MISMATCH: { category: "usage" },
  CHAIN_NO_FINGERPRINT: { category: "usage" },
  CHAIN_NO_INTERVAL: { category: "usage" },
  CHAIN_NO_SHARED_ARM: { category: "usage" },
  CHAIN_RATIO_INVALID: { category: "input" },
  CHAIN_RECORD_NOT_AB: { category: "usage" },
  CHAIN_SHARED_ARM_DIFFERS: { category: "usage" },
  CHAIN_TOO_SHORT: { category: "usage" },

  // records
  RECORD_ARM_NOT_FOUND: { category: "usage" },
  RECORD_EXISTS: { category: "usage" },
  RECORD_INVALID: { category: "input" },
  RECORD_NO_VALUE: { category: "usage" },
  RECORD_NOT_FOUND: { category: "usage" },
  RECORD_NOT_LOCAL: { category: "usage" },
  RECORD_PUBLISH_CONFLICT: { category: "usage" },
  RECORDS_COMPARE_RECORD_METHOD: { category: "usage" },
  RECORDS_CORRUPT: { category: "input" },
  RECORDS_DIFFERENT_METRICS: { category: "usage" },
  RECORDS_FILE_INVALID: { category: "input" },
  RECORDS_INVALID: { category: "input" },
  RECORDS_NO_FINGERPRINT: { category: "usage" },
  RECORDS_NOT_COMPARABLE: { category: "usage" },
  RECORDS_SAME_CONDITIONS: { category: "usage" },
  RECORDS_WRITE_SHORT: { category: "environment" },

  // site
  SITE_BAD_FIGURE_REF: { category: "input" },
  SITE_BUILD_FAILED: { category: "environment" },
  SITE_DUPLICATE_RECORD: { category: "input" },
  SITE_EMPTY_CATALOG: { category: "input" },
  SITE_NOT_BUILT: { category: "usage" },
  SITE_OUT_NOT_DIRECTORY: { category: "usage" },
  SITE_OUT_NOT_SITE: { category: "usage" },
  SITE_SERVE_FAILED: { category: "environment" },
  SITE_UNKNOWN_RECORD: { category: "input" },

  // recipes
  RECIPE_ENV_CONFLICT: { category: "input" },
  RECIPE_MULTI_NODE: { category: "input" },
  RECIPE_NO_MODEL_CODE: { category: "input" },
  RECIPE_PLATFORM_MISMATCH: { category: "input" },
  RECIPE_VALUE_UNSAFE: { category: "input" },

  // cli and the flow
  BAD_ARGUMENT: { category: "usage" },
  CLI_AB_ARMS: { category: "usage" },
  CLI_DATASET_PATH_MISSING: { category: "usage" },
  CLI_INVALID_GOODPUT: { category: "usage" },
  CLI_INVALID_METRIC: { category: "usage" },
  CLI_INVALID_NUMBER: { category: "usage" },
  DEVICE_ABORTED: { category: "interrupted" },
  DEVICE_BLOCKS_STEPS: { category: "internal" },
  DEVICE_BLOCKS_TOKENS: { category: "usage" },
  DEVICE_SERVER_EXITED: { category: "environment" },
  DEVICE_SERVER_TIMEOUT: { category: "environment" },
  DEVICE_VENV_MISSING: { category: "environment" },
  OUT_MISSING: { category: "usage" },
  PORT_NO_DEVICE_CHECK: { category: "usage" },
  PORT_NO_MODEL_CODE: { category: "usage" },
  PORT_NO_REFERENCE: { category: "usage" },
  UP_ABORTED: { category: "interrupted" },
  UP_FLAG_NEEDS_ENDPOINT: { category: "usage" },
  UP_REFERENCE_WITHOUT_ENDPOINT: { category: "usage" },
  UP_SWEEP_FLAG_CONFLICT: { category: "usage" },
  UP_SWITCH_INVALID: { category: "input" },

  // why a gate or an A/B of `up` did not run (summary rows)
  PORT_NO_RETRIEVAL_MODEL: { category: "not-run" },
  UP_AB_ARM_MISSING: { category: "not-run" },
  UP_AB_HOSTS_DIFFER: { category: "not-run" },
  UP_AB_SWITCHES_EXTERNAL: { category: "not-run" },
  UP_AB_TOO_LONG: { category: "not-run" },
  UP_AB_WEIGHTS_EXTERNAL: { category: "not-run" },
  UP_NO_BASELINE: { category: "not-run" },
  UP_NO_CONVERSION: { category: "not-run" },
} as const satisfies Record<string, CatalogueEntry>;

/** A declared error code; the type checker refuses any other string. */
export type ErrorCode = keyof typeof ERROR_CATALOGUE;

function entry(code: ErrorCode): CatalogueEntry {
  return ERROR_CATALOGUE[code];
}

export function errorCategory(code: ErrorCode): ErrorCategory {
  return entry(code).category;
}

/** The HTTP status the server answers a request with when it fails with `code`. */
export function httpStatus(code: ErrorCode): ErrorHttpStatus {
  const found = entry(code);
  return found.status ?? ERROR_CATEGORIES[found.category].status;
}

/** The OpenAI error `code` reported for `code`. */
export function openaiCode(code: ErrorCode): string {
  return entry(code).openai ?? code.toLowerCase();
}

/** The exit code the CLI ends with when a command fails with `code`. */
export function exitCode(code: ErrorCode): number {
  return ERROR_CATEGORIES[errorCategory(code)].exit;
}
