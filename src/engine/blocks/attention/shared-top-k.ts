import { BringupError } from "../../../common/errors.js";

/**
 * The positions a DSA layer's indexer chose for each token of the current forward step, handed
 * to the layers after it that GLM's `indexer_types` marks "shared": they run no indexer and attend
 * the same positions (HF transformers `models/glm_moe_dsa/modeling_glm_moe_dsa.py`: a shared
 * layer's `skip_topk` reuses `prev_topk_indices`, passed on through a run of shared layers). Layers
 * run in order within a step, so the last full layer's choice is the one a shared layer reads.
 */
export class SharedTopK {
  private selected: Int32Array[] | undefined;
  private tokens = -1;

  /** A full layer's choice for the step's T tokens (undefined: every token attends densely). */
  publish(selected: Int32Array[] | undefined, tokens: number): void {
    this.selected = selected;
    this.tokens = tokens;
  }

  /** The choice the last full layer published for this step's T tokens. */
  reuse(tokens: number): Int32Array[] | undefined {
    if (tokens !== this.tokens) {
      throw new BringupError(
        "ENGINE_SHAPE",
        `a shared-indexer layer reads the top-k of ${this.tokens} tokens in a step of ${tokens}; the layer before it must be a full indexer layer of the same model (indexer_types).`,
        { subject: "indexer_types" },
      );
    }
    return this.selected;
  }
}
