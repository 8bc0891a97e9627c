import { BringupError } from "../../common/errors.js";
import type { LayerStates } from "../cache/state-spec.js";
import type { LayerStorage } from "../cache/storage.js";
import { embed } from "../kernels/embedding.js";
import { rmsNorm } from "../kernels/rmsnorm.js";
import type { Weight } from "../tensor/weight.js";
import type { DecoderLayer, ForwardContext, ResidualStream } from "./model.js";
import type { ModelSwitch } from "./model-switch.js";
import { stepArray } from "./step-scratch.js";

export interface CausalLMParts {
  readonly hiddenSize: number;
  readonly vocabSize: number;
  readonly rmsNormEps: number;
  readonly embedding: Weight;
  readonly residual: ResidualStream;
  readonly layers: readonly DecoderLayer[];
  readonly finalNorm: Float32Array;
  /** The output projection; the embedding table itself when embeddings are tied. */
  readonly lmHead: Weight;
  readonly switches?: readonly ModelSwitch[];
}

/**
 * A decoder-only model built from blocks: embedding, a residual stream through layers (each a token
 * mixer and a feed-forward part joined by their connections), a final norm and the LM head. Every
 * token's arithmetic depends only on its own sequence, so a batch gives the same bits as each of
 * its sequences alone.
 */
export class CausalLM {
  readonly hiddenSize: number;
  readonly vocabSize: number;
  readonly layers: readonly DecoderLayer[];
  readonly switches: readonly ModelSwitch[];
  readonly residual: ResidualStream;

  constructor(private readonly parts: CausalLMParts) {
    this.hiddenSize = parts.hiddenSize;
    this.vocabSize = parts.vocabSize;
    this.layers = parts.layers;
    this.switches = parts.switches ?? [];
    this.residual = parts.residual;
    if (parts.lmHead.rows !== parts.vocabSize || parts.embedding.rows !== parts.vocabSize) {
      throw new BringupError(
        "MODEL_WEIGHTS_MISMATCH",
        `the embedding has ${parts.embedding.rows} rows and the LM head ${parts.lmHead.rows}, but vocab_size is ${parts.vocabSize}.`,
      );
    }
  }

  /** The same model with `extra` switches declared beside its own (the engine's, such as `mxfp4`). */
  withSwitches(extra: readonly ModelSwitch[]): CausalLM {
    return new CausalLM({ ...this.parts, switches: [...this.switches, ...extra] });
  }

  /** What each layer keeps per sequence when the model runs with `switches` (default: defaults). */
  states(switches: ReadonlyMap<string, string> = new Map()): LayerStates[] {
    return this.layers.map((l) => l.mixer.states(switches));
  }

  /** Runs one step; storage[l] is layer l's. Returns logits [logitRows.length, vocabSize]. */
  forward(ctx: ForwardContext, storage: readonly LayerStorage[]): Float32Array {
    const { batch, pool } = ctx;
    const T = batch.tokens.length;
    const H = this.hiddenSize;
    const x = stepArray(ctx, Float32Array, T * H);
    embed(this.parts.embedding, batch.tokens, x);
    // The tap's arguments (copies) are evaluated only when there is a tap.
    const tap = ctx.tap;
    tap?.("embed", x.slice(), T);
    const X = this.parts.residual.expand(x, T, ctx);
    this.layers.forEach((layer, l) => {
      layer.mixerConnection.apply(X, T, (h) => layer.mixer.forward(h, ctx, storage[l] as LayerStorage), ctx);
      tap?.(`layers.${l}.mixer`, X.slice(), T);
      layer.ffnConnection.apply(X, T, (h) => layer.ffn.forward(h, ctx), ctx);
      tap?.(`layers.${l}.ffn`, X.slice(), T);
    });
    const R = batch.logitRows.length;
    if (R === 0) return new Float32Array(0);
    const width = this.parts.residual.streams * H;
    const rows = stepArray(ctx, Float32Array, R * width);
    for (let r = 0; r < R; r++) {
      const t = batch.logitRows[r] as number;
      rows.set(X.subarray(t * width, (t + 1) * width), r * width);
    }
    const last = this.parts.residual.collapse(rows, R, ctx);
    rmsNorm(last, R, H, this.parts.finalNorm, this.parts.rmsNormEps);
    const logits = stepArray(ctx, Float32Array, R * this.vocabSize);
    pool.matmul(last, R, this.parts.lmHead, logits);
    tap?.("logits", logits.slice(), R);
    return logits;
  }
}
