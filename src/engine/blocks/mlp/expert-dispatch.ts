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
  const gatheredAll = stepArray(ctx, Float32Array, T * topK * H);
  let first = 0;
  for (let e = 0; e < numExperts; e++) {
    const members: number[] = [];
    for (let t = 0; t < T; t++) {
      const ex = (routes[t] as Routing).experts;
      for (let r = 0; r < topK; r++) if (ex[r] === e) members.push(t * topK + r);
    }
    if (members.length === 0) continue;
    const gathered = gatheredAll.subarray(first * H, (first + members.length) * H);
    members.forEach((m, i) => {
      const t = Math.floor(m / topK);
      gathered.set(h.subarray(t * H, (t + 1) * H), i * H);
    });
    const y = run(e, gathered, members.length, first);
    first += members.length;
    members.forEach((m, i) => {
      perRank.set(y.subarray(i * H, (i + 1) * H), m * H);
    });
  }
  for (let t = 0; t < T; t++) {
    const { weights } = routes[t] as Routing;
    for (let i = 0; i < H; i++) {
      let s = 0;
      for (let r = 0; r < topK; r++)
        s += (weights[r] as number) * (perRank[(t * topK + r) * H + i] as number);
      out[t * H + i] = (out[t * H + i] as number) + s;
    }
  }
}
