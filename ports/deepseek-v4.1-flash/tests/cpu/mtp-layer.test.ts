import { afterAll, describe, expect, it } from "vitest";
import { MatmulPool } from "../../../../src/engine/kernels/pool.js";
import { isDraftModel } from "../../../../src/engine/model/draft-model.js";
import { Rng } from "../../../../src/engine/tensor/random.js";
import { portReference } from "../../../../test/helpers/port-reference.js";
import { promptBatch } from "../../../../test/helpers/prompt-batch.js";

const ref = await portReference("deepseek-v4.1-flash");
const model = ref.referenceModel();
const head = model.model.drafter;
const pool = new MatmulPool(1, { simd: false });
afterAll(() => pool.close());
const switches = new Map([["v4_attention", "sparse"]]);
const W = model.model.residual.streams * model.model.hiddenSize;
const H = model.model.hiddenSize;

/** The MTP layer's logits for `tokens` at positions 0.., given the streams `previous`, on fresh state. */
function logits(tokens: number[], previous: Float32Array): Float32Array {
  if (!isDraftModel(head)) throw new Error(head.reason);
  const { batch, storage } = promptBatch([head.states(switches)], tokens);
  return head.forward({ batch, pool, switches }, storage[0] as (typeof storage)[number], previous).logits;
}

describe("DeepSeek-V4's MTP layer (vLLM's DeepSeekV4MultiTokenPredictorLayer)", () => {
  const rng = new Rng(3);
  const T = 5;
  const previous = Float32Array.from({ length: T * W }, () => rng.normal());
  const tokens = [17, 40, 41, 300, 5];
  const base = logits(tokens, previous);

  it("masks the token embedding at position 0, as vLLM does", () => {
    expect(logits([99, ...tokens.slice(1)], previous)).toEqual(base);
    expect(logits([tokens[0] as number, 99, ...tokens.slice(2)], previous)).not.toEqual(base);
  });

  it("norms each mHC stream of the target's residual on its own (hnorm per stream)", () => {
    // Scaling one stream of one row by 4 leaves its per-stream RMS norm, hence every logit, as it
    // was (up to rounding); a norm over the flattened streams would change the mix.
    const scaled = previous.slice();
    for (let d = 0; d < H; d++) scaled[2 * W + H + d] = (scaled[2 * W + H + d] as number) * 4;
    const out = logits(tokens, scaled);
    const V = model.model.vocabSize;
    for (let i = 0; i < T * V; i++) expect(out[i]).toBeCloseTo(base[i] as number, 3);
    const flipped = previous.slice();
    for (let d = 0; d < H; d++) flipped[2 * W + H + d] = -(flipped[2 * W + H + d] as number);
    expect(logits(tokens, flipped).slice(2 * V, 3 * V)).not.toEqual(base.slice(2 * V, 3 * V));
  });
});
