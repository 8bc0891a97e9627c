import { type ScratchHolder, stepArray } from "../../model/step-scratch.js";
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
  const sums = stepArray(ctx, Float64Array, H);
  if (T === 1) {
    // One token: its chosen experts run in rank order (the pair at rank r is row r), each output
    // added to the sum while it is still in cache; nothing is gathered, kept or copied.
    const { experts, weights } = routes[0] as Routing;
    const x = h.subarray(0, H);
    for (let r = 0; r < experts.length; r++)
      addWeighted(sums, weights[r] as number, run(experts[r] as number, x, 1, r), 0);
    addSums(out, 0, sums);
    return;
  }
  const topK = routes[0]?.experts.length ?? 0;
  // Each (token, rank) output kept apart until the mix, the pairs gathered expert by expert.
  const perRank = stepArray(ctx, Float32Array, T * topK * H);
  const gatheredAll = stepArray(ctx, Float32Array, T * topK * H);
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
    if (t > 0) sums.fill(0);
    for (let r = 0; r < topK; r++) addWeighted(sums, weights[r] as number, perRank, (t * topK + r) * H);
    addSums(out, t * H, sums);
  }
}

/** sums[i] += w · y[at + i] for each of the sums (f64: the same bits in any step shape). */
function addWeighted(sums: Float64Array, w: number, y: Float32Array, at: number): void {
  for (let i = 0; i < sums.length; i++) sums[i] = (sums[i] as number) + w * (y[at + i] as number);
}

/** out[at + i] += sums[i], each sum rounded to f32 once. */
function addSums(out: Float32Array, at: number, sums: Float64Array): void {
  for (let i = 0; i < sums.length; i++) out[at + i] = (out[at + i] as number) + (sums[i] as number);
}
