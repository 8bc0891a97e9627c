import { rmsNorm } from "../../kernels/rmsnorm.js";
import { addInto } from "../../kernels/vector/vector-ops.js";
import type { Connection, ResidualStream } from "../../model/model.js";
import { type ScratchHolder, stepArrayToFill } from "../../model/step-scratch.js";

/** The ordinary residual: one stream, the embeddings themselves, read as they are at the end. */
export const PLAIN_RESIDUAL: ResidualStream = {
  streams: 1,
  expand: (x) => x,
  collapse: (X) => X,
};

/** Pre-norm residual (llama): X += block(RMSNorm(X) * weight). */
export class PreNormConnection implements Connection {
  constructor(
    private readonly norm: Float32Array,
    private readonly eps: number,
    readonly normTensor: string,
  ) {}

  apply(X: Float32Array, T: number, block: (h: Float32Array) => Float32Array, ctx: ScratchHolder): void {
    const H = this.norm.length;
    const h = stepArrayToFill(ctx, Float32Array, T * H);
    rmsNorm(X, T, H, this.norm, this.eps, h);
    const y = block(h);
    addInto(X, y);
  }
}
