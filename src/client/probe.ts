import packageJson from "../../package.json" with { type: "json" };
import { BringupError, isBringupError } from "../common/errors.js";
import type { Fingerprint } from "../records/index.js";
import { Endpoint } from "./endpoint.js";
import type { RequestOptions } from "./http.js";
import { kvTokenCapacity } from "./metrics.js";
import { type ScoringPath, scoreTokens } from "./scoring.js";

/** A short text whose tokens must come out the same from /tokenize and from /v1/completions. */
const PROBE_TEXT = "The harbour lay quiet at dawn, and 42 boats waited for the tide.";

/** What an endpoint offers, found by asking it; each missing piece says why. */
export interface EndpointProbe {
  readonly url: string;
  readonly model: string;
  readonly maxModelLen?: number;
  /** "bringup", "vllm" (a /version without a server name) or "unknown" (no /version). */
  readonly server: string;
  readonly serverVersion?: string;
  readonly scoring?: ScoringPath;
  readonly scoringProblem?: string;
  /** True when /tokenize answers and agrees with the tokens /v1/completions uses. */
  readonly tokenizer: boolean;
  readonly tokenizerProblem?: string;
  readonly kvTokenCapacity?: number;
  readonly metricsProblem?: string;
  readonly fingerprint: Fingerprint;
}

/** A connected endpoint with what the probe found; gates ask it for what they need. */
export class ProbedEndpoint {
  constructor(
    readonly endpoint: Endpoint,
    readonly probe: EndpointProbe,
  ) {}

  /** The scoring path, or ENDPOINT_LACKS_PROMPT_LOGPROBS naming what is missing. */
  requireScoring(): ScoringPath {
    if (this.probe.scoring) return this.probe.scoring;
    throw new BringupError(
      "ENDPOINT_LACKS_PROMPT_LOGPROBS",
      `${this.endpoint.url} offers neither vLLM's prompt_logprobs nor echo + logprobs (${this.probe.scoringProblem}); serve it with prompt logprobs enabled.`,
      { subject: this.endpoint.url },
    );
  }

  /** Passes when /tokenize agrees with the completions route; else ENDPOINT_LACKS_TOKENIZER or TOKENIZER_MISMATCH. */
  requireTokenizer(): void {
    if (this.probe.tokenizer) return;
    const mismatch = this.probe.tokenizerProblem?.startsWith("mismatch") ?? false;
    throw new BringupError(
      mismatch ? "TOKENIZER_MISMATCH" : "ENDPOINT_LACKS_TOKENIZER",
      `${this.endpoint.url}: ${this.probe.tokenizerProblem}`,
      { subject: this.endpoint.url },
    );
  }
}

/**
 * Connects to `url` and finds what it offers: model and context length (/v1/models), server and
 * version (/version), the scoring path, whether /tokenize matches the tokens the completions route
 * scores, and the KV token capacity (/metrics). Only an endpoint without /v1/models fails outright.
 */
export async function probeEndpoint(url: string, options: RequestOptions = {}): Promise<ProbedEndpoint> {
  const endpoint = await Endpoint.connect(url, options);
  const problem = (error: unknown) => {
    if (isBringupError(error)) return error.message;
    throw error;
  };

  let server = "unknown";
  let serverVersion: string | undefined;
  try {
    const version = await endpoint.version();
    server = version.server ?? "vllm";
    serverVersion = version.version;
  } catch (error) {
    problem(error);
  }

  let probeIds: number[] | undefined;
  let tokenizerProblem: string | undefined;
  try {
    probeIds = await endpoint.tokenize(PROBE_TEXT, false);
    if (probeIds.length < 2) tokenizerProblem = "/tokenize returned fewer than two tokens for a sentence";
  } catch (error) {
    tokenizerProblem = `/tokenize is missing or broken: ${problem(error)}`;
  }

  // Scoring is tried on token ids, so it works even where /tokenize does not.
  const ids = probeIds && probeIds.length >= 2 ? probeIds : [1, 2, 3, 4];
  let scoring: ScoringPath | undefined;
  const scoringProblems: string[] = [];
  for (const path of ["prompt_logprobs", "echo"] as const) {
    try {
      await scoreTokens(endpoint, path, ids);
      scoring = path;
      break;
    } catch (error) {
      scoringProblems.push(`${path}: ${problem(error)}`);
    }
  }

  if (tokenizerProblem === undefined && probeIds !== undefined) {
    try {
      tokenizerProblem = await tokenizerMismatch(endpoint, scoring);
    } catch (error) {
      tokenizerProblem = `could not compare /tokenize with /v1/completions: ${problem(error)}`;
    }
  }

  let capacity: number | undefined;
  let metricsProblem: string | undefined;
  try {
    capacity = kvTokenCapacity(await endpoint.metrics());
    if (capacity === undefined)
      metricsProblem =
        "/metrics states no KV token capacity (bringup:kv_cache_token_capacity or vllm:cache_config_info)";
  } catch (error) {
    metricsProblem = `/metrics is missing or broken: ${problem(error)}`;
  }

  const host = new URL(endpoint.url).hostname;
  const fingerprint: Fingerprint = {
    host,
    software: { ...(serverVersion !== undefined ? { [server]: serverVersion } : {}), model: endpoint.model },
    ...(endpoint.maxModelLen !== undefined
      ? { server_flags: [`--max-model-len=${endpoint.maxModelLen}`] }
      : {}),
    tool_version: `bringup ${packageJson.version}`,
  };
  return new ProbedEndpoint(endpoint, {
    url: endpoint.url,
    model: endpoint.model,
    ...(endpoint.maxModelLen !== undefined ? { maxModelLen: endpoint.maxModelLen } : {}),
    server,
    ...(serverVersion !== undefined ? { serverVersion } : {}),
    ...(scoring !== undefined ? { scoring } : { scoringProblem: scoringProblems.join("; ") }),
    tokenizer: tokenizerProblem === undefined,
    ...(tokenizerProblem !== undefined ? { tokenizerProblem } : {}),
    ...(capacity !== undefined ? { kvTokenCapacity: capacity } : {}),
    ...(metricsProblem !== undefined ? { metricsProblem } : {}),
    fingerprint,
  });
}

/**
 * Sends the probe text as a string prompt and compares the tokens the completions route used with
 * what /tokenize says (special tokens included, as a completions prompt gets them). Returns a
 * description of the difference, or undefined when they agree.
 */
async function tokenizerMismatch(
  endpoint: Endpoint,
  scoring: ScoringPath | undefined,
): Promise<string | undefined> {
  const claimed = await endpoint.tokenize(PROBE_TEXT, true);
  const choice = await endpoint.complete({
    prompt: PROBE_TEXT,
    max_tokens: 1,
    temperature: 0,
    ...(scoring === "prompt_logprobs" ? { prompt_logprobs: 0 } : {}),
  });
  const used = choice.promptTokens;
  if (used === undefined)
    return "the completions route reports no usage.prompt_tokens, so /tokenize cannot be checked";
  if (used !== claimed.length) {
    return `mismatch: /tokenize gives ${claimed.length} tokens for a probe sentence but /v1/completions used ${used}; /tokenize does not speak for the served model's tokenizer.`;
  }
  if (scoring === "prompt_logprobs" && choice.prompt_logprobs) {
    for (const [i, id] of claimed.entries()) {
      const entry = choice.prompt_logprobs[i];
      if (i > 0 && entry && !(String(id) in entry)) {
        return `mismatch: /tokenize gives token ${id} at position ${i} of a probe sentence but /v1/completions scored other tokens; /tokenize does not speak for the served model's tokenizer.`;
      }
    }
  }
  return undefined;
}
