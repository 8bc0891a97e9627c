import { WeightedSum } from "../../kernels/vector/vector-ops.js";
import { type ScratchHolder, stepArrayToFill } from "../../model/step-scratch.js";
import type { Routing } from "./routing.js";

/**
 * Runs each expert once over the tokens routed to it and mixes the outputs: out[t] = Σ_r w_r ·
 * expert_{e_r}(h[t]) summed in rank order, so a token's result does not depend on what else is in
 * the batch. `run(e, x, n, first)` maps n gathered rows x [n, H] to [n, H]; they are rows
 * `first` .. `first + n - 1` of the T x topK (token, rank) pairs, so a run may keep its own
 * temporaries at those rows of buffers of T x topK rows. `out` [T, H] is added to.
 * Its buffers are the same few whatever the routing, so a replayed step (StepScratch) reuses them.
 */
export function mixExperts(
  h: Float32Array,
  T: number,
  H: number,
  numExperts: number,
  routes: readonly Routing[],
  run: (expert: number, x: Float32Array, n: number, first: number) => Float32Array,
  out: Float32Array,
  ctx: ScratchHolder = {},
): void {
  // Rank by rank into one f64 sum a value, then once into out.
  const sum = weightedSum(H);
  sum.clear();
  if (T === 1) {
    // One token: its chosen experts run in rank order (the pair at rank r is row r), each output
    // added to the sum while it is still in cache; nothing is gathered, kept or copied.
    const { experts, weights } = routes[0] as Routing;
    const x = h.subarray(0, H);
    for (let r = 0; r < experts.length; r++)
      sum.add(weights[r] as number, run(experts[r] as number, x, 1, r));
    sum.addTo(out);
    return;
  }
  const topK = routes[0]?.experts.length ?? 0;
  // Each (token, rank) output kept apart until the mix, the pairs gathered expert by expert.
  const perRank = stepArrayToFill(ctx, Float32Array, T * topK * H);
  const gatheredAll = stepArrayToFill(ctx, Float32Array, T * topK * H);
  const members: number[] = [];
  let first = 0;
  for (let e = 0; e < numExperts; e++) {
    members.length = 0;
    for (let t = 0; t < T; t++) {
      const ex = (routes[t] as Routing).experts;
      for (let r = 0; r < topK; r++) if (ex[r] === e) members.push(t * topK + r);
    }
    const n = members.length;
    if (n === 0) continue;
    const gathered = gatheredAll.subarray(first * H, (first + n) * H);
    for (let i = 0; i < n; i++) {
      const t = Math.floor((members[i] as number) / topK);
      gathered.set(h.subarray(t * H, (t + 1) * H), i * H);
    }
    const y = run(e, gathered, n, first);
    first += n;
    for (let i = 0; i < n; i++) perRank.set(y.subarray(i * H, (i + 1) * H), (members[i] as number) * H);
  }
  for (let t = 0; t < T; t++) {
    const { weights } = routes[t] as Routing;
    if (t > 0) sum.clear();
    for (let r = 0; r < topK; r++) sum.add(weights[r] as number, perRank, (t * topK + r) * H);
    sum.addTo(out, t * H);
  }
}

/**
 * One token's mix as mixExperts makes it (the same bits) where its experts' outputs are already
 * rows r of `ys` [weights.length, H] in rank order: out [H] += Σ_r weights[r] · ys[r].
 */
export function mixRows(weights: Float64Array, ys: Float32Array, H: number, out: Float32Array): void {
  const sum = weightedSum(H);
  sum.clear();
  for (let r = 0; r < weights.length; r++) sum.add(weights[r] as number, ys, r * H);
  sum.addTo(out);
}

/** The mix's sums, one per row length, made once (mixExperts is never re-entered). */
const sums = new Map<number, WeightedSum>();

function weightedSum(length: number): WeightedSum {
  const made = sums.get(length) ?? new WeightedSum(length);
  sums.set(length, made);
  return made;
}
