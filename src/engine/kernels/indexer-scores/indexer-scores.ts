/**
 * One query's DSA indexer scores over `count` cached keys: for position p (its key the `d` values
 * at keys[offsets[p]]), scores[p] = Σ_h weights[h] · ReLU(q_h · key_p) with q_h the h-th row of d
 * values of `q`, each dot accumulated in f64 in ascending feature order and the heads added in
 * ascending order (a head whose dot is not positive adds nothing). `scores` is zeroed first.
 * The plain reference: the WebAssembly kernel (indexer-scores.wat) must give its bits.
 */
export function indexerScores(
  q: Float32Array,
  weights: Float64Array,
  d: number,
  keys: Float32Array,
  offsets: Int32Array,
  count: number,
  scores: Float64Array,
): void {
  scores.fill(0, 0, count);
  const heads = weights.length;
  for (let s = 0; s < count; s++) {
    const base = offsets[s] as number;
    let score = 0;
    for (let h = 0; h < heads; h++) {
      let dot = 0;
      for (let i = 0; i < d; i++) dot += (q[h * d + i] as number) * (keys[base + i] as number);
      if (dot > 0) score += (weights[h] as number) * dot;
    }
    scores[s] = score;
  }
}
