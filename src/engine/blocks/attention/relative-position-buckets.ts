/**
 * T5's relative-position buckets, causal form: HF transformers `models/t5/modeling_t5.py`
 * `T5Attention._relative_position_bucket(relative_position, bidirectional=False, num_buckets,
 * max_distance)`. A query at position p and a key at position j ≤ p are d = p − j apart:
 *
 *   d < numBuckets/2 (max_exact)           bucket d, one bucket per distance
 *   max_exact ≤ d                          max_exact + trunc(log(d / max_exact) / log(maxDistance / max_exact)
 *                                                            · (numBuckets − max_exact)), at most numBuckets − 1
 *
 * so distances from maxDistance on all share the last bucket: the longest distance a bucket was
 * trained to tell apart is maxDistance. The log term is computed in float32 steps as torch does on a
 * float32 tensor (log of the float32 ratio, divided by the float64 constant, rounded to float32).
 */

/**
 * The bucket of each distance 0..maxDistance (index min(d, maxDistance) for any d ≥ 0, as
 * kernels/paged-attention `RelativeBias.buckets` reads it); refuses
 * sizes T5 cannot bucket by throwing RangeError (callers validate config fields first).
 */
export function relativeBucketTable(numBuckets: number, maxDistance: number): Int32Array {
  const maxExact = Math.floor(numBuckets / 2);
  if (!Number.isInteger(numBuckets) || maxExact < 1 || !(maxDistance > maxExact))
    throw new RangeError(`cannot bucket ${numBuckets} buckets up to distance ${maxDistance}`);
  const table = new Int32Array(maxDistance + 1);
  const logRange = Math.log(maxDistance / maxExact);
  for (let d = 0; d <= maxDistance; d++) {
    if (d < maxExact) {
      table[d] = d;
      continue;
    }
    const f = Math.fround(Math.fround(Math.log(Math.fround(d / maxExact))) / logRange);
    const large = maxExact + Math.trunc(Math.fround(f * (numBuckets - maxExact)));
    table[d] = Math.min(large, numBuckets - 1);
  }
  return table;
}
