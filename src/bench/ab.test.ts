import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTinyModel, findTinySize, type LoadedModel } from "../engine/index.js";
import { readRecords } from "../records/index.js";
import { METRIC_NAMES, type RunningServer, startServer } from "../server/index.js";
import { runAb } from "./ab.js";
import { chainRecord, composeChain } from "./chain.js";
import { randomWorkload } from "./workload.js";

/** Starts a server whose matmuls use the WebAssembly SIMD tile or, with simd false, the plain reference kernel. */
async function serve(model: LoadedModel, simd: boolean, port = 0): Promise<RunningServer> {
  // The engine reads this switch when its matmul pool is built, inside startServer; it has no option for it.
  const previous = process.env.BRINGUP_ENGINE_SIMD;
  process.env.BRINGUP_ENGINE_SIMD = simd ? "1" : "0";
  try {
    return await startServer({ model, port, threads: 1 });
  } finally {
    if (previous === undefined) delete process.env.BRINGUP_ENGINE_SIMD;
    else process.env.BRINGUP_ENGINE_SIMD = previous;
  }
}

describe("A/B against the embedded server", () => {
  let small: LoadedModel;
  let tiny: LoadedModel;
  let dir: string;

  beforeAll(async () => {
    const smallSize = findTinySize("small");
    const tinySize = findTinySize("tiny");
    if (!smallSize || !tinySize) throw new Error("size table lacks small or tiny");
    [small, tiny] = await Promise.all([createTinyModel(smallSize), createTinyModel(tinySize)]);
    dir = await mkdtemp(join(tmpdir(), "bringup-ab-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("restarting one server between arms, SIMD against the plain kernel gives an interval above 1", async () => {
    // Arm a is the plain kernel; arm b the SIMD tile, several times faster on the small model's matmuls.
    let server = await serve(small, false);
    const port = Number(new URL(server.url).port);
    const target = { url: server.url, model: server.modelName, ignoreEos: true };
    /** Requests each restarted server completed before it was closed. */
    const served: number[] = [];
    const completed = async (s: RunningServer) => {
      const text = await (await fetch(`${s.url}/metrics`)).text();
      const lines = text.split("\n").filter((l) => l.startsWith(METRIC_NAMES.requestSuccess));
      return lines.reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
    };
    try {
      const result = await runAb({
        a: { name: "plain", target, fingerprint: { host: "h", hardware: "cpu", server_flags: ["simd=0"] } },
        b: { name: "simd", target, fingerprint: { host: "h", hardware: "cpu", server_flags: ["simd=1"] } },
        workload: randomWorkload({ numPrompts: 2, inputLen: 16, outputLen: 8, seed: 1 }),
        maxConcurrency: 1,
        numWarmups: 1,
        blocks: 6,
        metric: "output_throughput",
        switchTo: async (arm) => {
          served.push(await completed(server));
          await server.close();
          server = await serve(small, arm === "b", port);
        },
        records: { dir, port: "demo" },
        runId: "ab-simd",
      });
      served.push(await completed(server));
      // Each restarted server: one warmup after the switch, then per trial one warmup and two prompts;
      // none lost to a pooled connection that led to the server before it.
      const trialsPerServer = [1, ...Array<number>(11).fill(2), 1];
      expect(served).toEqual([0, ...trialsPerServer.map((n) => 1 + 3 * n)]);
      expect(result.method).toBe("same-pod-ab");
      expect(result.trials.map((t) => t.arm).join("")).toBe("abba".repeat(6));
      expect(result.interval.low).toBeGreaterThan(1);
      const records = await readRecords(dir);
      const record = records.find((r) => r.id === "demo/ab-simd");
      expect(record?.method).toBe("same-pod-ab");
      expect(record?.comparison?.ci95?.[0]).toBeGreaterThan(1);
      expect(record?.arms.map((a) => a.samples.length)).toEqual([12, 12]);
      expect(record?.arms[0]?.fingerprint?.workload_hash).toMatch(/^sha256:/);
      // Every trial was kept as it was measured, beside the A/B.
      expect(records.filter((r) => r.id.startsWith("demo/ab-simd-t")).length).toBe(24);
    } finally {
      await server.close();
    }
  });

  it("an A/A on two live servers with one setting gives an interval that holds 1", async () => {
    const [one, two] = await Promise.all([serve(tiny, true), serve(tiny, true)]);
    try {
      // A 95% interval misses 1 in 20 runs by design, so the claim is checked as "at least 4 of 7":
      // an interval that holds 19 times in 20 fails that 2 times in 10000 (9 in 10: 3 in 1000),
      // one that holds 2 times in 10 passes it 3 times in 100. As "2 of 3" it failed 7 times in
      // 1000 by chance, and did fail one CI run; A/As of this shape under bursty load here missed
      // 1 in 30, twice, so the interval holds its coverage.
      const held: boolean[] = [];
      for (let seed = 1; seed <= 7; seed++) {
        const result = await runAb({
          a: { name: "one", target: { url: one.url, model: one.modelName, ignoreEos: true } },
          b: { name: "two", target: { url: two.url, model: two.modelName, ignoreEos: true } },
          workload: randomWorkload({ numPrompts: 2, inputLen: 16, outputLen: 12, seed }),
          maxConcurrency: 1,
          numWarmups: 1,
          blocks: 6,
          metric: "output_throughput",
        });
        expect(result.method).toBe("same-node-ab");
        held.push(result.interval.low <= 1 && result.interval.high >= 1);
      }
      expect(held.filter(Boolean).length).toBeGreaterThanOrEqual(4);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });

  it("chains two A/B records that share an arm", async () => {
    const records = await readRecords(dir);
    const ab = records.find((r) => r.id === "demo/ab-simd");
    if (!ab?.comparison?.ci95 || ab.comparison.figure.shape !== "point") throw new Error("no A/B record");
    // The second link goes from simd back to plain: the same two arms, reversed, with its own ratio.
    const back = {
      ...ab,
      id: "demo/ab-simd-back",
      arms: [ab.arms[1], ab.arms[0]].filter((arm) => arm !== undefined),
      comparison: {
        ...ab.comparison,
        figure: { shape: "point" as const, value: 0.5 },
        ci95: [0.4, 0.625] as [number, number],
      },
    };
    const chain = composeChain([ab, back]);
    const ratio = ab.comparison.figure.value;
    expect(chain.path).toEqual(["plain", "simd", "plain"]);
    expect(chain.interval.estimate).toBeCloseTo(ratio * 0.5, 9);
    const [low, high] = ab.comparison.ci95;
    const z = 1.959963984540054;
    const se = Math.hypot(Math.log(high / low) / (2 * z), Math.log(0.625 / 0.4) / (2 * z));
    expect(chain.interval.low).toBeCloseTo(ratio * 0.5 * Math.exp(-z * se), 9);
    expect(chain.interval.high).toBeCloseTo(ratio * 0.5 * Math.exp(z * se), 9);
    const record = chainRecord([ab, back], { port: "demo", id: "chain-1" });
    expect(record.method).toBe("chained-ab");
    expect(record.chained_from).toEqual(["demo/ab-simd", "demo/ab-simd-back"]);
    expect(() => composeChain([ab, ab])).toThrow(/starts with "plain"/);
  });
});
