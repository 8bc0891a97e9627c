import type { Routing } from "./routing.js";

/**
 * Runs each expert once over the tokens routed to it and mixes the outputs: out[t] = Σ_r w_r ·
 * expert_{e_r}(h[t]) summed in rank order, so a token's result does not depend on what else is in
 * the batch. `run(e, x, n)` maps n gathered rows x [n, H] to [n, H]; `out` [T, H] is added to.
 */
export function mixExperts(
  h: Float32Array,
  T: number,
  H: number,
  numExperts: number,
  routes: readonly Routing[],
  run: (expert: number, x: Float32Array, n: number) => Float32Array,
  out: Float32Array,
): void {
  const topK = routes[0]?.experts.length ?? 0;
  // Each (token, rank) output kept apart until the mix.
  const perRank = new Float32Array(T * topK * H);
  for (let e = 0; e < numExperts; e++) {
    const members: number[] = [];
    for (let t = 0; t < T; t++) {
      const ex = (routes[t] as Routing).experts;
      for (let r = 0; r < topK; r++) if (ex[r] === e) members.push(t * topK + r);
    }
    if (members.length === 0) continue;
    const gathered = new Float32Array(members.length * H);
    members.forEach((m, i) => {
      const t = Math.floor(m / topK);
      gathered.set(h.subarray(t * H, (t + 1) * H), i * H);
    });
    const y = run(e, gathered, members.length);
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
