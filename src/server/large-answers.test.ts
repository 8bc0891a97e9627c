import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "./index.js";
import { StallWatch } from "./stall-watch.js";

// Issue 27, item 5: a large answer (a long prompt's prompt_logprobs with 20 alternatives) is
// rebuilt and sent in parts, so it never holds the server's HTTP thread for 100 ms (StallWatch's
// rule: CPU the thread itself spent between two timer ticks).
let server: RunningServer;

beforeAll(async () => {
  server = await startServer({ tinySize: "tiny", port: 0, threads: 1, maxModelLen: 2048 });
});
afterAll(async () => {
  await server.close();
});

const ids = Array.from({ length: 2000 }, (_, i) => 3 + ((i * 104729) % 500));

describe("large answers", () => {
  it.each([false, true])(
    "with stream %s, prompt_logprobs 20 of 2000 tokens hold the HTTP thread under 100 ms",
    async (stream) => {
      const watch = new StallWatch(100);
      const res = await fetch(`${server.url}/v1/completions`, {
        method: "POST",
        body: JSON.stringify({ prompt: ids, max_tokens: 1, prompt_logprobs: 20, stream }),
      });
      const text = await res.text();
      watch.stop();
      expect(res.status).toBe(200);
      const first = JSON.parse(stream ? (text.split("\n\n")[0] as string).slice("data: ".length) : text);
      const positions = first.choices[0].prompt_logprobs as (Record<string, { rank: number }> | null)[];
      expect(positions).toHaveLength(2000);
      expect(positions[0]).toBeNull();
      expect(Object.keys(positions[1] ?? {}).length).toBeGreaterThanOrEqual(20);
      expect(text.length).toBeGreaterThan(2_000_000);
      expect(watch.stalls).toEqual([]);
    },
    120_000,
  );
});
