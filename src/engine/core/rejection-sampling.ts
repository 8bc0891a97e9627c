import { sampleFrom, type UniformSource } from "../sampler.js";

/**
 * The standard speculative-sampling rule (Leviathan et al. 2023, "Fast Inference from Transformers
 * via Speculative Decoding", and Chen et al. 2023; vLLM's `v1/sample/rejection_sampler.py`): a
 * draft token d drawn from the draft distribution q is kept with probability min(1, p(d) / q(d)),
 * p the target distribution; when it is rejected the token is drawn from max(0, p - q),
 * renormalized. The token emitted is then distributed exactly as p.
 */
export function verifyDraft(
  p: Float64Array,
  q: Float64Array,
  draft: number,
  rng: UniformSource,
): { readonly accepted: boolean; readonly token: number } {
  const pd = p[draft] as number;
  const qd = q[draft] as number;
  if (qd > 0 && rng.next() * qd < pd) return { accepted: true, token: draft };
  const residual = new Float64Array(p.length);
  let total = 0;
  for (let i = 0; i < p.length; i++) {
    const r = Math.max(0, (p[i] as number) - (q[i] as number));
    residual[i] = r;
    total += r;
  }
  // p = q leaves no residual; rejection then has probability 0, so only rounding gets here.
  return { accepted: false, token: total > 0 ? sampleFrom(residual, rng, total) : sampleFrom(p, rng) };
}
