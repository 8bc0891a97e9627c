import { expect } from "vitest";
import type { Gate as GateSpec } from "../../catalog/index.js";
import { runGateSession } from "../session.js";

/**
 * Runs the needles gate (three needles at each of `contexts`, all needed) against the server at
 * `url` and expects every needle retrieved at every depth: what each port's retrieval variant must do.
 */
export async function expectEveryNeedle(url: string, corpus: string, contexts: number[]): Promise<void> {
  const spec: GateSpec = { kind: "needles", contexts, needles: 3, min_retrieved: 3 };
  const { outcomes } = await runGateSession([spec], {
    endpointUrl: url,
    corpus,
    needleContexts: contexts,
    needleAnswerTokens: 12,
  });
  const [outcome] = outcomes;
  expect(outcome?.status).toBe("passed");
  expect(outcome?.grid).toEqual({
    depths: [0.25, 0.5, 0.75],
    rows: contexts.map((context) => ({ context, retrieved: [true, true, true] })),
  });
}
