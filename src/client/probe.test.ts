import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isBringupError } from "../common/errors.js";
import { startServer } from "../server/index.js";
import { kvTokenCapacity } from "./metrics.js";
import { probeEndpoint } from "./probe.js";
import { scoreTokens } from "./scoring.js";
import { startTestServer } from "./test-servers.js";

type Closer = { close(): Promise<void> };
const open: Closer[] = [];
let upstream: string;

beforeAll(async () => {
  const server = await startServer({ tinySize: "tiny", port: 0, threads: 1 });
  open.push(server);
  upstream = server.url;
});
afterAll(async () => {
  for (const s of open.reverse()) await s.close();
});

async function misbehaving(options: Parameters<typeof startTestServer>[0]): Promise<string> {
  const server = await startTestServer(options);
  open.push(server);
  return server.url;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (isBringupError(error)) return error.code;
    throw error;
  }
  return "no error";
}

describe("probeEndpoint", () => {
  it("finds what the embedded server offers and fingerprints it", async () => {
    const { probe, endpoint } = await probeEndpoint(`${upstream}/v1/`);
    expect(probe.model).toBe("tiny");
    expect(probe.server).toBe("bringup");
    expect(probe.scoring).toBe("prompt_logprobs");
    expect(probe.tokenizer).toBe(true);
    expect(probe.kvTokenCapacity).toBeGreaterThan(0);
    expect(probe.fingerprint.host).toBe("127.0.0.1");
    expect(probe.fingerprint.software?.model).toBe("tiny");
    expect(probe.fingerprint.server_flags?.[0]).toMatch(/^--max-model-len=\d+$/);
    // Both scoring paths give the same numbers on one server.
    const ids = await endpoint.tokenize("The tide came in over the harbour wall.");
    expect(await scoreTokens(endpoint, "echo", ids)).toEqual(
      await scoreTokens(endpoint, "prompt_logprobs", ids),
    );
  });

  it("falls back to echo + logprobs where prompt_logprobs is dropped, and names what is missing when neither is there", async () => {
    const noPromptLogprobs = await misbehaving({
      upstream,
      rewriteRequest: (_path, body) => ({ ...(body as object), prompt_logprobs: undefined }),
    });
    expect((await probeEndpoint(noPromptLogprobs)).probe.scoring).toBe("echo");
    const noLogprobs = await misbehaving({
      upstream,
      rewriteRequest: (_path, body) => ({ ...(body as object), prompt_logprobs: undefined, echo: undefined }),
    });
    const target = await probeEndpoint(noLogprobs);
    expect(target.probe.scoring).toBeUndefined();
    expect(() => target.requireScoring()).toThrow(/neither vLLM's prompt_logprobs nor echo \+ logprobs/);
  });

  it("catches a /tokenize that does not speak for the served tokenizer", async () => {
    const url = await misbehaving({
      upstream,
      rewriteResponse: (path, body) => {
        if (path !== "/tokenize") return body;
        const tokens = (body as { tokens: number[] }).tokens;
        return { ...(body as object), tokens: [...tokens, ...tokens], count: tokens.length * 2 };
      },
    });
    const target = await probeEndpoint(url);
    expect(target.probe.tokenizer).toBe(false);
    expect(() => target.requireTokenizer()).toThrow(/tokenizer/);
    expect(await codeOf(Promise.resolve().then(() => target.requireTokenizer()))).toBe("TOKENIZER_MISMATCH");
  });

  it("gives clear errors for a server that hangs, answers non-JSON, or lacks fields", async () => {
    const hang = await misbehaving({ handle: () => "hang" });
    expect(await codeOf(probeEndpoint(hang, { timeoutMs: 200 }))).toBe("ENDPOINT_TIMEOUT");
    const html = await misbehaving({ handle: () => [200, "<html>hello</html>"] });
    expect(await codeOf(probeEndpoint(html))).toBe("ENDPOINT_MALFORMED_JSON");
    const empty = await misbehaving({ handle: () => [200, JSON.stringify({ data: [] })] });
    await expect(probeEndpoint(empty)).rejects.toThrow(/"data"/);
    expect(await codeOf(probeEndpoint("http://127.0.0.1:1"))).toBe("ENDPOINT_UNREACHABLE");
    expect(await codeOf(probeEndpoint("ftp://example"))).toBe("ENDPOINT_URL_INVALID");
  });
});

describe("kvTokenCapacity", () => {
  it("reads bringup's gauge and vLLM's cache_config_info", () => {
    expect(kvTokenCapacity('bringup:kv_cache_token_capacity{model_name="m"} 4096\n')).toBe(4096);
    const vllm = 'vllm:cache_config_info{block_size="16",cache_dtype="auto",num_gpu_blocks="2500"} 1.0\n';
    expect(kvTokenCapacity(vllm)).toBe(40000);
    expect(kvTokenCapacity("vllm:num_requests_running 0\n")).toBeUndefined();
  });
});
