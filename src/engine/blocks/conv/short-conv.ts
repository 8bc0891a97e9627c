/**
 * Short causal depthwise convolution with a carried tail, as KDA applies to q, k and v.
 *
 * Sources followed: fla-org/flash-linear-attention `fla/modules/conv/short_conv.py` (`ShortConvolution`,
 * an nn.Conv1d with groups = channels and padding kernel−1, keeping the output's first T positions) and
 * vLLM `causal_conv1d_update` as used in `vllm/model_executor/layers/kda.py`. Per channel c, over the
 * input stream [tail, x] (tail = the K−1 inputs before x, oldest first):
 *
 *   y[t, c] = Σ_{j=0}^{K−1} w[c, j] · stream[t + j, c]       w[c, K−1] multiplies the newest input x[t, c]
 *   out[t, c] = silu(y) = y · sigmoid(y) when `silu`, else y
 *
 * Layouts, row-major: x, out [T, C]; weight [C, K] (the checkpoint's q_conv1d.weight [C, 1, K] with the
 * middle axis dropped); tail [C, K−1], updated in place to the last K−1 inputs of [tail, x], zeros at the
 * start of a sequence. Kimi Linear's convolutions have no bias.
 *
 * Rounding: each output is a float64 sum in ascending j, rounded once into `out`. An output depends only
 * on K stored float32 inputs and the tail only copies inputs, so splitting a sequence at any point gives
 * the same bits as one call. `out` must not share memory with `x`.
 */
import { silu as siluOf } from "../activations.js";
import { expectDims, expectLength } from "../shapes.js";

export function shortConv(
  x: Float32Array,
  weight: Float32Array,
  tail: Float32Array,
  T: number,
  C: number,
  K: number,
  out: Float32Array,
  silu: boolean,
): void {
  expectDims("shortConv", { T, C, K });
  expectLength("shortConv", "x", x, T * C, "[T, C]");
  expectLength("shortConv", "weight", weight, C * K, "[C, K]");
  expectLength("shortConv", "tail", tail, C * (K - 1), "[C, K-1]");
  expectLength("shortConv", "out", out, T * C, "[T, C]");
  const held = K - 1;
  // stream position p: the tail for p < K−1, then x[p − (K−1)]
  const streamAt = (p: number, c: number): number =>
    p < held ? (tail[c * held + p] as number) : (x[(p - held) * C + c] as number);
  for (let t = 0; t < T; t++) {
    for (let c = 0; c < C; c++) {
      let y = 0;
      for (let j = 0; j < K; j++) y += (weight[c * K + j] as number) * streamAt(t + j, c);
      out[t * C + c] = silu ? siluOf(y) : y;
    }
  }
  // keep the last K−1 positions of the stream (length K−1+T); read before overwriting, oldest first
  for (let c = 0; c < C; c++) {
    for (let m = 0; m < held; m++) tail[c * held + m] = streamAt(T + m, c);
  }
}
