/**
 * The OpenAI-compatible client the gates and the bench use: it assumes nothing about the server
 * (the embedded one, vLLM, vllm-gaudi) and finds out what it offers.
 *
 *   const target = await probeEndpoint("http://127.0.0.1:8000");
 *   target.probe;                      // model, server + version, scoring path, tokenizer, KV capacity, fingerprint
 *   await scoreTokens(target.endpoint, target.requireScoring(), ids);
 */
export {
  type CompletionChoice,
  type CompletionRequest,
  CompletionResponse,
  Endpoint,
  normalizeBaseUrl,
} from "./endpoint.js";
export { checkEndpoint, describeEndpoint, ENDPOINT_CHECK_TIMEOUT_MS } from "./endpoint-check.js";
export { DEFAULT_TIMEOUT_MS, type RequestOptions, requestJson, requestText } from "./http.js";
export { kvTokenCapacity } from "./metrics.js";
export { type EndpointProbe, ProbedEndpoint, probeEndpoint } from "./probe.js";
export { type ScoringPath, scoreTokens } from "./scoring.js";
export { readTokenStream, SseParser, type TokenChunk, type TokenStream, TokenStreamReader } from "./sse.js";
