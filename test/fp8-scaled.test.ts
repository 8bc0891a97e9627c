/**
 * The `fp8=scaled` switch on whole models whose FP8 weights have 128x128 tile scales (the tiny
 * mixtral and the small llama stored in FP8, scales absmax/448 per tile as real checkpoints have
 * them; a matrix narrower than a tile is one band),
 * against the f64 reference (the plain kernels): prompt logprobs within a stated distance and the
 * same greedy tokens. The prompt is fed one token a step (maxNumBatchedTokens 1), so every matmul
 * runs at one input row, where the switch acts. The kernel's own error is stated and held in
 * src/engine/kernels/matmul/fp8-scaled.test.ts. A model whose FP8 weights have 1x32 scale blocks
 * (MiniMax-M3's tiny kit converted as the port converts it) refuses the switch by name.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  createTinyModel,
  Engine,
  findTinySize,
  loadModel,
  type TinySize,
  writeTinyModel,
} from "../src/engine/index.js";
import { minimaxArchitecture } from "../src/engine/models/minimax-m3.js";
import { convertCheckpoint } from "../src/formats/index.js";
import { promptAndGreedy } from "./helpers/engine-runs.js";
import { bringupErrorOf, portReference } from "./helpers/port-reference.js";

/**
 * The largest |Δ logprob| allowed at any prompt position, and on average over the prompt (nats).
 * Measured when the path was written (47 positions each): max 5.20e-8 and 3.01e-7, mean 1.65e-8
 * and 9.48e-8 for tiny-moe and small (fp8=exact at one row: max 4.48e-8 and 3.03e-7): f32
 * accumulation error, as the exact path's.
 */
const MAX_LOGPROB_DELTA = 2e-6;
const MEAN_LOGPROB_DELTA = 5e-7;

const PROMPT_TEXT =
  "Salt tightens the gluten, so a dough salted early feels firmer. Rest it for an hour and the strands relax again.";

describe("fp8=scaled on tiny models with FP8 tile weights", () => {
  for (const size of ["tiny-moe", "small"]) {
    it(`${size}: prompt logprobs within ${MAX_LOGPROB_DELTA} (mean ${MEAN_LOGPROB_DELTA}) of the f64 reference, the same greedy tokens`, async () => {
      const model = await createTinyModel(findTinySize(size) as TinySize, { dtype: "fp8" });
      expect(model.model.switches.find((s) => s.name === "fp8")?.values).toEqual(["exact", "scaled"]);
      const prompt = model.tokenizer.encode(PROMPT_TEXT).slice(0, 48);
      const reference = await promptAndGreedy(model, prompt, { simd: false, threads: 1 });
      const oneRow = { maxNumBatchedTokens: 1 };
      const exact = await promptAndGreedy(model, prompt, oneRow);
      const scaled = await promptAndGreedy(model, prompt, { ...oneRow, switches: { fp8: "scaled" } });
      const deltas = (run: { logprobs: number[] }) =>
        run.logprobs.map((lp, i) => Math.abs(lp - (reference.logprobs[i] as number)));
      const [worst, mean] = [
        Math.max(...deltas(scaled)),
        deltas(scaled).reduce((a, b) => a + b, 0) / prompt.length,
      ];
      console.log(
        `${size} fp8=scaled vs f64: max |Δ logprob| ${worst.toExponential(2)}, mean ${mean.toExponential(2)}; ` +
          `fp8=exact at one row: max ${Math.max(...deltas(exact)).toExponential(2)}`,
      );
      expect(worst).toBeLessThanOrEqual(MAX_LOGPROB_DELTA);
      expect(mean).toBeLessThanOrEqual(MEAN_LOGPROB_DELTA);
      // The switch changes the arithmetic: not the exact path's logprobs.
      expect(scaled.logprobs).not.toEqual(exact.logprobs);
      expect(scaled.tokens).toEqual(reference.tokens);
    });
  }

  it("is refused by name where the FP8 weights have 1x32 scale blocks", async () => {
    const dir = await mkdtemp(join(tmpdir(), "bringup-fp8-scaled-"));
    try {
      const { referenceFiles } = await portReference("minimax-m3");
      await writeTinyModel(join(dir, "mxfp4"), referenceFiles());
      await convertCheckpoint(join(dir, "mxfp4"), join(dir, "fp8"), { to: "fp8", fp8Block: "block32" });
      const model = await loadModel(join(dir, "fp8"));
      expect(model.architecture).toBe(minimaxArchitecture);
      expect(model.model.switches.find((s) => s.name === "fp8")?.values).toEqual(["exact"]);
      const { code, message } = bringupErrorOf(() => new Engine(model, { switches: { fp8: "scaled" } }));
      expect(code).toBe("ENGINE_OPTIONS_INVALID");
      expect(message).toContain("fp8=scaled");
      expect(message).toContain("1x32");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
