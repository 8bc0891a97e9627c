import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Gate as GateSpec } from "../catalog/index.js";
import { startTestServer } from "../client/test-servers.js";
import { createTinyModel, findTinySize, readCorpus } from "../engine/index.js";
import { readRecords } from "../records/index.js";
import { type RunningServer, startServer } from "../server/index.js";
import { appendGateRecords, gateRecord } from "./record.js";
import { allPassed } from "./run.js";
import { runGateSession } from "./session.js";

const perplexity: GateSpec = { kind: "perplexity", reference: "recorded", max_relative_diff: 0.01 };
const needles: GateSpec = { kind: "needles", contexts: [256], needles: 3, min_retrieved: 3 };
const capacity: GateSpec = { kind: "kv-capacity", expected_ratio: 1, tolerance: 0.01 };
const closers: { close(): Promise<void> }[] = [];
let corpus: string;
let a: RunningServer;
let b: RunningServer;

beforeAll(async () => {
  corpus = await readCorpus();
  const size = findTinySize("tiny");
  if (!size) throw new Error("tiny size missing");
  const model = await createTinyModel(size);
  a = await startServer({ model, port: 0, threads: 1 });
  b = await startServer({ model, port: 0, threads: 1 });
  closers.push(a, b);
});
afterAll(async () => {
  for (const c of closers.reverse()) await c.close();
});

async function misbehaving(options: Parameters<typeof startTestServer>[0]): Promise<string> {
  const server = await startTestServer(options);
  closers.push(server);
  return server.url;
}

describe("gates against misbehaving endpoints are not run, never passed", () => {
  const cases: [string, () => Promise<string>, RegExp][] = [
    ["times out", () => misbehaving({ handle: () => "hang" }), /ENDPOINT_TIMEOUT/],
    [
      "answers its model list but hangs on completions",
      () =>
        misbehaving({ upstream: a.url, handle: (path) => (path === "/v1/completions" ? "hang" : undefined) }),
      /ENDPOINT_LACKS_PROMPT_LOGPROBS: .*did not answer within 300 ms/,
    ],
    [
      "answers malformed JSON",
      () => misbehaving({ handle: () => [200, "{not json"] }),
      /ENDPOINT_MALFORMED_JSON/,
    ],
    [
      "lacks prompt logprobs",
      () =>
        misbehaving({
          upstream: a.url,
          rewriteRequest: (_p, body) => ({
            ...(body as object),
            prompt_logprobs: undefined,
            echo: undefined,
          }),
        }),
      /ENDPOINT_LACKS_PROMPT_LOGPROBS/,
    ],
    [
      "has another tokenizer than /tokenize claims",
      () =>
        misbehaving({
          upstream: a.url,
          rewriteResponse: (path, body) =>
            path === "/tokenize" ? { ...(body as object), tokens: [1, 2, 3], count: 3 } : body,
        }),
      /TOKENIZER_MISMATCH/,
    ],
  ];
  for (const [what, start, code] of cases) {
    it(`an endpoint that ${what}`, async () => {
      const url = await start();
      const { outcomes } = await runGateSession([perplexity], {
        endpointUrl: url,
        referenceValue: 500,
        corpus,
        windowTokens: 64,
        windows: 1,
        request: { timeoutMs: 300 },
      });
      expect(outcomes[0]?.status).toBe("not-run");
      expect(`${outcomes[0]?.code}: ${outcomes[0]?.summary}`).toMatch(code);
      expect(allPassed(outcomes)).toBe(false);
    });
  }

  it("a reference endpoint that cannot be reached leaves comparing gates not run", async () => {
    const { outcomes } = await runGateSession([capacity], {
      endpointUrl: a.url,
      referenceUrl: "http://127.0.0.1:1",
    });
    expect(outcomes[0]?.code).toBe("ENDPOINT_UNREACHABLE");
  });
});

describe("gate records", () => {
  it("appends a same-pod-ab record with both arms' samples and fingerprints; a not-run gate gets none", async () => {
    const dir = await mkdtemp(join(tmpdir(), "bringup-gate-records-"));
    try {
      const specs = [capacity, needles];
      const { context, outcomes } = await runGateSession(specs, {
        endpointUrl: a.url,
        referenceUrl: b.url,
        corpus,
        needleContexts: [100_000],
      });
      expect(outcomes.map((o) => o.status)).toEqual(["passed", "not-run"]);
      const written = await appendGateRecords(
        dir,
        "demo-port",
        specs.map((spec, i) => ({ spec, outcome: outcomes[i] as (typeof outcomes)[number] })),
        context,
      );
      expect(written).toHaveLength(1);
      const [record] = await readRecords(dir);
      expect(record?.method).toBe("same-pod-ab");
      expect(record?.id).toMatch(/^demo-port\/gate-kv-capacity-/);
      expect(record?.arms.map((arm) => arm.samples.length)).toEqual([1, 1]);
      expect(record?.arms[0]?.fingerprint?.software?.bringup).toBeDefined();
      const single = gateRecord(
        "demo-port",
        capacity,
        { ...(outcomes[0] as (typeof outcomes)[number]), arms: outcomes[0]?.arms?.slice(0, 1) ?? [] },
        context,
      );
      expect(single?.method).toBe("single-run");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
