import { BringupError } from "../../common/errors.js";
import type { LayerStates } from "../cache/state-spec.js";
import type { LayerStorage } from "../cache/storage.js";
import { embed } from "../kernels/embedding.js";
import type { MatmulPool } from "../kernels/pool.js";
import { rmsNorm } from "../kernels/rmsnorm.js";
import type { Weight } from "../tensor/weight.js";
import type { DraftModel } from "./draft-model.js";
import type { DecoderLayer, ForwardContext, ResidualStream, StepResult } from "./model.js";
import type { ModelSwitch } from "./model-switch.js";
import { type ScratchHolder, stepArrayToFill } from "./step-scratch.js";

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
  /** The checkpoint's draft head (an MTP layer), or why there is none to draft with. */
  readonly drafter?: DraftModel | NoDrafter;
}

/** Why a model cannot draft: the config field or tensor that says so, in a sentence. */
export interface NoDrafter {
  readonly subject: string;
  readonly reason: string;
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

  /** The embedding table (a draft head embeds with it too). */
  get embedding(): Weight {
    return this.parts.embedding;
  }

  /** The LM head (a draft head shares it). */
  get lmHead(): Weight {
    return this.parts.lmHead;
  }

  /** The draft head, or why there is none (a family that declares none has none). */
  get drafter(): DraftModel | NoDrafter {
    return (
      this.parts.drafter ?? {
        subject: "speculative_tokens",
        reason: "this model's family has no MTP layer to draft with",
      }
    );
  }

  /** The same model with the checkpoint's draft head, or the reason it has none. */
  withDrafter(drafter: DraftModel | NoDrafter): CausalLM {
    return new CausalLM({ ...this.parts, drafter });
  }

  /** Runs one step; storage[l] is layer l's. Returns logits [logitRows.length, vocabSize]. */
  forward(ctx: ForwardContext, storage: readonly LayerStorage[]): Float32Array {
    return this.step(ctx, storage).logits;
  }

  /** Runs one step as `forward` does, returning the residual stream of every token beside the logits. */
  step(ctx: ForwardContext, storage: readonly LayerStorage[]): StepResult {
    const { batch, pool } = ctx;
    const T = batch.tokens.length;
    const H = this.hiddenSize;
    const x = stepArrayToFill(ctx, Float32Array, T * H);
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
    const p = this.parts;
    const logits = headLogits(X, batch.logitRows, p.residual, p.finalNorm, p.rmsNormEps, p.lmHead, pool, ctx);
    if (logits.length > 0) tap?.("logits", logits.slice(), batch.logitRows.length);
    return { logits, streams: X };
  }
}

/**
 * The logits of rows `logitRows` of the residual stream X: each row's streams collapsed, RMS-normed
 * with `norm` and projected by `lmHead` ([rows, lmHead.rows]).
 */
export function headLogits(
  X: Float32Array,
  logitRows: readonly number[],
  residual: ResidualStream,
  norm: Float32Array,
  eps: number,
  lmHead: Weight,
  pool: MatmulPool,
  ctx: ScratchHolder = {},
): Float32Array {
  const R = logitRows.length;
  if (R === 0) return new Float32Array(0);
  const H = norm.length;
  const width = residual.streams * H;
  const rows = stepArrayToFill(ctx, Float32Array, R * width);
  for (let r = 0; r < R; r++) {
    const t = logitRows[r] as number;
    rows.set(X.subarray(t * width, (t + 1) * width), r * width);
  }
  const last = residual.collapse(rows, R, ctx);
  rmsNorm(last, R, H, norm, eps);
  const logits = stepArrayToFill(ctx, Float32Array, R * lmHead.rows);
  pool.matmul(last, R, lmHead, logits);
  return logits;
}
