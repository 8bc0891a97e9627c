import { type ScratchHolder, stepArray } from "../../model/step-scratch.js";
import type { Routing } from "./routing.js";

/**
 * Runs each expert once over the tokens routed to it and mixes the outputs: out[t] = Σ_r w_r ·
 * expert_{e_r}(h[t]) summed in rank order, so a token's result does not depend on what else is in
 * the batch. `run(e, x, n, first)` maps n gathered rows x [n, H] to [n, H]; they are rows
 * `first` .. `first + n - 1` of the T x topK (token, rank) pairs gathered expert by expert, so a run
 * may keep its own temporaries at those rows of buffers of T x topK rows. `out` [T, H] is added to.
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
  const topK = routes[0]?.experts.length ?? 0;
  // Each (token, rank) output kept apart until the mix.
  const perRank = stepArray(ctx, Float32Array, T * topK * H);
  // At one token every chosen expert's input is the token's row itself: nothing is gathered.
  const gatheredAll = T === 1 ? h.subarray(0, H) : stepArray(ctx, Float32Array, T * topK * H);
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
    const gathered = T === 1 ? gatheredAll : gatheredAll.subarray(first * H, (first + n) * H);
    if (T > 1)
      for (let i = 0; i < n; i++) {
        const t = Math.floor((members[i] as number) / topK);
        gathered.set(h.subarray(t * H, (t + 1) * H), i * H);
      }
    const y = run(e, gathered, n, first);
    first += n;
    for (let i = 0; i < n; i++)
      perRank.set(y.length === H ? y : y.subarray(i * H, (i + 1) * H), (members[i] as number) * H);
  }
  // Rank by rank into one f64 sum a value (the same additions in the same order as a sum over
  // ranks value by value, so the same bits), then once into out.
  const sums = stepArray(ctx, Float64Array, H);
  for (let t = 0; t < T; t++) {
    const { weights } = routes[t] as Routing;
    sums.fill(0);
    for (let r = 0; r < topK; r++) {
      const w = weights[r] as number;
      const at = (t * topK + r) * H;
      for (let i = 0; i < H; i++) sums[i] = (sums[i] as number) + w * (perRank[at + i] as number);
    }
    const o = t * H;
    for (let i = 0; i < H; i++) out[o + i] = (out[o + i] as number) + (sums[i] as number);
  }
}
