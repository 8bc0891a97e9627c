/**
 * Kimi Delta Attention (KDA), token by token, for one sequence.
 *
 * Source followed: fla-org/flash-linear-attention `fla/ops/kda/naive.py` (`naive_recurrent_kda`), the
 * per-token form that vLLM's `fused_recurrent_kda` also computes. Per head, with the state S of shape
 * [dk, dv] and per-channel log-decay g (≤ 0):
 *
 *   S ← diag(exp(g)) · S                      decay: row i of S is scaled by exp(g_i)
 *   S ← S + k ⊗ β (v − kᵀS)                    delta rule: write the part of v that S does not yet predict
 *   o = qᵀ S                                   read out with the updated state
 *
 * q must already be L2-normalized and scaled by dk^-1/2 and k L2-normalized (see `l2NormalizeHeads`);
 * fla's naive kernel applies the scale itself, here the caller does so the kernel has one meaning.
 *
 * Layouts, row-major, one sequence of T tokens and H heads (value heads equal key heads, as in Kimi
 * Linear):
 *   q, k   [T, H, dk]        v, out [T, H, dv]        g [T, H, dk]        beta [T, H]
 *   state  [H, dk, dv]       updated in place; zeros at the start of a sequence
 *
 * Rounding (both kernels below, identically): inputs are float32; every intermediate of a token is a
 * float64 (JS number). A token rounds to float32 at exactly two places: its output o (stored into
 * `out`) and its updated state S (stored into `state` when the token ends). The next token starts from
 * that float32 state, so running T tokens in one call equals running them one call per token, bit for
 * bit. Sums over the key channel i run in ascending i starting from 0.
 */
import { expectDims, expectLength } from "../shapes.js";

/** The argument list shared by the recurrent kernels. */
export interface KdaInputs {
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  g: Float32Array;
  beta: Float32Array;
}

/** Validates the layouts named in the file comment. */
export function checkKdaShapes(
  kernel: string,
  x: KdaInputs,
  T: number,
  H: number,
  dk: number,
  dv: number,
  state: Float32Array,
  out: Float32Array,
): void {
  expectDims(kernel, { T, H, dk, dv });
  expectLength(kernel, "q", x.q, T * H * dk, "[T, H, dk]");
  expectLength(kernel, "k", x.k, T * H * dk, "[T, H, dk]");
  expectLength(kernel, "v", x.v, T * H * dv, "[T, H, dv]");
  expectLength(kernel, "g", x.g, T * H * dk, "[T, H, dk]");
  expectLength(kernel, "beta", x.beta, T * H, "[T, H]");
  expectLength(kernel, "state", state, H * dk * dv, "[H, dk, dv]");
  expectLength(kernel, "out", out, T * H * dv, "[T, H, dv]");
}

/**
 * The plain reference: each step of the update is its own pass over a float64 copy of S, written to
 * be read beside the equations above.
 */
export function kdaRecurrent(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  g: Float32Array,
  beta: Float32Array,
  T: number,
  H: number,
  dk: number,
  dv: number,
  state: Float32Array,
  out: Float32Array,
): void {
  checkKdaShapes("kdaRecurrent", { q, k, v, g, beta }, T, H, dk, dv, state, out);
  const S = new Float64Array(dk * dv);
  const kS = new Float64Array(dv);
  const u = new Float64Array(dv);
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < H; h++) {
      const keyBase = (t * H + h) * dk;
      const valueBase = (t * H + h) * dv;
      const stateBase = h * dk * dv;
      // S ← diag(exp(g)) · S
      for (let i = 0; i < dk; i++) {
        const decay = Math.exp(g[keyBase + i] as number);
        for (let j = 0; j < dv; j++) S[i * dv + j] = (state[stateBase + i * dv + j] as number) * decay;
      }
      // kᵀS
      kS.fill(0);
      for (let i = 0; i < dk; i++) {
        const ki = k[keyBase + i] as number;
        for (let j = 0; j < dv; j++) kS[j] = (kS[j] as number) + ki * (S[i * dv + j] as number);
      }
      // u = β (v − kᵀS)
      const b = beta[t * H + h] as number;
      for (let j = 0; j < dv; j++) u[j] = b * ((v[valueBase + j] as number) - (kS[j] as number));
      // S ← S + k ⊗ u
      for (let i = 0; i < dk; i++) {
        const ki = k[keyBase + i] as number;
        for (let j = 0; j < dv; j++) S[i * dv + j] = (S[i * dv + j] as number) + ki * (u[j] as number);
      }
      // o = qᵀS, then the two float32 stores
      for (let j = 0; j < dv; j++) {
        let o = 0;
        for (let i = 0; i < dk; i++) o += (q[keyBase + i] as number) * (S[i * dv + j] as number);
        out[valueBase + j] = o;
      }
      for (let e = 0; e < dk * dv; e++) state[stateBase + e] = S[e] as number;
    }
  }
}

/**
 * The same arithmetic in two passes over the float32 state instead of five, with no [dk, dv] scratch:
 * pass 1 decays each row and accumulates kᵀS; pass 2 recomputes the decayed value (the same float64
 * product, so the same bits), applies the delta update, accumulates qᵀS and stores S. Every float64
 * operation and every summation order matches `kdaRecurrent`, so the results are equal bit for bit.
 */
export function kdaRecurrentFused(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  g: Float32Array,
  beta: Float32Array,
  T: number,
  H: number,
  dk: number,
  dv: number,
  state: Float32Array,
  out: Float32Array,
): void {
  checkKdaShapes("kdaRecurrentFused", { q, k, v, g, beta }, T, H, dk, dv, state, out);
  const decay = new Float64Array(dk);
  const kS = new Float64Array(dv);
  const u = new Float64Array(dv);
  const o = new Float64Array(dv);
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < H; h++) {
      const keyBase = (t * H + h) * dk;
      const valueBase = (t * H + h) * dv;
      const stateBase = h * dk * dv;
      kS.fill(0);
      for (let i = 0; i < dk; i++) {
        const d = Math.exp(g[keyBase + i] as number);
        decay[i] = d;
        const ki = k[keyBase + i] as number;
        const row = stateBase + i * dv;
        for (let j = 0; j < dv; j++) kS[j] = (kS[j] as number) + ki * ((state[row + j] as number) * d);
      }
      const b = beta[t * H + h] as number;
      for (let j = 0; j < dv; j++) u[j] = b * ((v[valueBase + j] as number) - (kS[j] as number));
      o.fill(0);
      for (let i = 0; i < dk; i++) {
        const d = decay[i] as number;
        const ki = k[keyBase + i] as number;
        const qi = q[keyBase + i] as number;
        const row = stateBase + i * dv;
        for (let j = 0; j < dv; j++) {
          const s = (state[row + j] as number) * d + ki * (u[j] as number);
          o[j] = (o[j] as number) + qi * s;
          state[row + j] = s;
        }
      }
      for (let j = 0; j < dv; j++) out[valueBase + j] = o[j] as number;
    }
  }
}
