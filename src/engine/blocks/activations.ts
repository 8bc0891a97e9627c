/** Scalar activations shared by the blocks, in float64, written as torch defines them. */

export function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

/** x · sigmoid(x). */
export function silu(x: number): number {
  return x * sigmoid(x);
}

/** torch's softplus with beta 1 and threshold 20: log(1 + e^x), or x itself once x > 20. */
export function softplus(x: number): number {
  return x > 20 ? x : Math.log1p(Math.exp(x));
}
