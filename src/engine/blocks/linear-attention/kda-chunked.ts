/**
 * KDA over whole chunks of tokens (the WY / UT-transform form), for prefill.
 *
 * Source followed: fla-org/flash-linear-attention `fla/ops/kda/naive.py` (`naive_chunk_kda`), step for
 * step. Within a chunk of L tokens (positions c, s ∈ [0, L)), per head, with Γ_c = g_0 + … + g_c (the
 * within-chunk cumulative log-decay, a vector over the key channels) and D_cs = exp(Γ_c − Γ_s):
 *
 *   L_cs  = β_c Σ_d k_cd D_cs,d k_sd          for s < c (strictly lower)
 *   A     = (I + L)⁻¹ diag(β)                  by forward substitution on −L, as fla's loop does
 *   W     = A (exp(Γ) ⊙ K),   U = A V          the UT transform: what each token writes, decay-corrected
 *   Aqk_cs = Σ_d q_cd D_cs,d k_sd             for s ≤ c
 *   V'    = U − W S                            the values minus what the entering state already predicts
 *   O     = (Q ⊙ exp(Γ)) S + Aqk V'            readout: the decayed entering state plus in-chunk writes
 *   S     ← diag(exp(Γ_last)) S + Σ_c (exp(Γ_last − Γ_c) ⊙ k_c) ⊗ V'_c
 *
 * This is algebraically the token recurrence of `kdaRecurrent` (same layouts, same q/k/g/β meaning); the
 * last chunk may be shorter than `chunkSize`. Rounding: float64 throughout a chunk; the output rounds to
 * float32 once, and the state rounds to float32 at the end of every chunk (so calls split at chunk
 * boundaries give the same bits as one call). It differs from the recurrence only by rounding: the
 * recurrence rounds S every token, this every chunk, and the operations are ordered differently.
 */
import { expectDims } from "../shapes.js";
import { checkKdaShapes, type KdaInputs } from "./kda-recurrence.js";

export function kdaChunked(
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
  chunkSize: number,
): void {
  checkKdaShapes("kdaChunked", { q, k, v, g, beta }, T, H, dk, dv, state, out);
  expectDims("kdaChunked", { chunkSize });
  const chunk = new ChunkScratch(Math.min(chunkSize, T), dk, dv);
  for (let h = 0; h < H; h++) {
    for (let t0 = 0; t0 < T; t0 += chunkSize) {
      chunk.load({ q, k, v, g, beta }, state, h, t0, Math.min(chunkSize, T - t0), H);
      chunk.solve();
      chunk.readOutAndAdvance(out, state, h, t0, H);
    }
  }
}

/** One head's chunk in float64, row-major: [L, dk] for q, k, Γ, W; [L, dv] for v, U; [L, L] for A, Aqk. */
class ChunkScratch {
  private L = 0;
  private readonly q: Float64Array;
  private readonly k: Float64Array;
  private readonly v: Float64Array;
  private readonly beta: Float64Array;
  private readonly gamma: Float64Array;
  private readonly a: Float64Array;
  private readonly aqk: Float64Array;
  private readonly w: Float64Array;
  private readonly u: Float64Array;
  private readonly s: Float64Array;
  private readonly newValues: Float64Array;

  constructor(
    private readonly capacity: number,
    private readonly dk: number,
    private readonly dv: number,
  ) {
    this.q = new Float64Array(capacity * dk);
    this.k = new Float64Array(capacity * dk);
    this.v = new Float64Array(capacity * dv);
    this.beta = new Float64Array(capacity);
    this.gamma = new Float64Array(capacity * dk);
    this.a = new Float64Array(capacity * capacity);
    this.aqk = new Float64Array(capacity * capacity);
    this.w = new Float64Array(capacity * dk);
    this.u = new Float64Array(capacity * dv);
    this.s = new Float64Array(dk * dv);
    this.newValues = new Float64Array(capacity * dv);
  }

  /** Gathers tokens [t0, t0 + L) of head h and the head's state; Γ = within-chunk cumulative sum of g. */
  load(x: KdaInputs, state: Float32Array, h: number, t0: number, L: number, H: number): void {
    const { dk, dv } = this;
    this.L = L;
    for (let c = 0; c < L; c++) {
      const keyBase = ((t0 + c) * H + h) * dk;
      for (let d = 0; d < dk; d++) {
        this.q[c * dk + d] = x.q[keyBase + d] as number;
        this.k[c * dk + d] = x.k[keyBase + d] as number;
        const previous = c === 0 ? 0 : (this.gamma[(c - 1) * dk + d] as number);
        this.gamma[c * dk + d] = previous + (x.g[keyBase + d] as number);
      }
      for (let j = 0; j < dv; j++) this.v[c * dv + j] = x.v[((t0 + c) * H + h) * dv + j] as number;
      this.beta[c] = x.beta[(t0 + c) * H + h] as number;
    }
    for (let e = 0; e < dk * dv; e++) this.s[e] = state[h * dk * dv + e] as number;
  }

  /** Σ_d left_d · exp(Γ_c,d − Γ_s,d) · k_s,d, with `left` row c of q or k. */
  private decayedDot(left: Float64Array, c: number, s: number): number {
    const { dk } = this;
    let acc = 0;
    for (let d = 0; d < dk; d++) {
      const decay = Math.exp((this.gamma[c * dk + d] as number) - (this.gamma[s * dk + d] as number));
      acc += (left[c * dk + d] as number) * decay * (this.k[s * dk + d] as number);
    }
    return acc;
  }

  /** Builds A = (I + L)⁻¹ diag(β), then W, U and Aqk. Needs only the chunk, not the state. */
  solve(): void {
    const { L, capacity: C, dk, dv, a } = this;
    // a ← −L: strictly lower, zero on and above the diagonal
    for (let c = 0; c < L; c++) {
      for (let s = 0; s < L; s++) {
        a[c * C + s] = s < c ? -(this.beta[c] as number) * this.decayedDot(this.k, c, s) : 0;
      }
    }
    // fla's loop: row i gets a[i][j] += Σ_m a[i][m] a[m][j] over the finished rows m < i; ascending j
    // reads a[i][m] (m > j) before it is overwritten. The result is (I + L)⁻¹ − I.
    for (let i = 1; i < L; i++) {
      for (let j = 0; j < i; j++) {
        let acc = a[i * C + j] as number;
        for (let m = j + 1; m < i; m++) acc += (a[i * C + m] as number) * (a[m * C + j] as number);
        a[i * C + j] = acc;
      }
    }
    // (that + I) · diag(β): scale column s by β_s
    for (let c = 0; c < L; c++) {
      a[c * C + c] = 1;
      for (let s = 0; s <= c; s++) a[c * C + s] = (a[c * C + s] as number) * (this.beta[s] as number);
    }
    // W = A (exp(Γ) ⊙ K), U = A V
    for (let c = 0; c < L; c++) {
      for (let d = 0; d < dk; d++) {
        let acc = 0;
        for (let s = 0; s <= c; s++) {
          acc +=
            (a[c * C + s] as number) *
            Math.exp(this.gamma[s * dk + d] as number) *
            (this.k[s * dk + d] as number);
        }
        this.w[c * dk + d] = acc;
      }
      for (let j = 0; j < dv; j++) {
        let acc = 0;
        for (let s = 0; s <= c; s++) acc += (a[c * C + s] as number) * (this.v[s * dv + j] as number);
        this.u[c * dv + j] = acc;
      }
    }
    for (let c = 0; c < L; c++) {
      for (let s = 0; s <= c; s++) this.aqk[c * C + s] = this.decayedDot(this.q, c, s);
    }
  }

  /** V' = U − W S; writes O; advances S past the chunk and stores it (float32) into the state. */
  readOutAndAdvance(out: Float32Array, state: Float32Array, h: number, t0: number, H: number): void {
    const { L, capacity: C, dk, dv, s: S } = this;
    for (let c = 0; c < L; c++) {
      for (let j = 0; j < dv; j++) {
        let predicted = 0;
        for (let d = 0; d < dk; d++) predicted += (this.w[c * dk + d] as number) * (S[d * dv + j] as number);
        this.newValues[c * dv + j] = (this.u[c * dv + j] as number) - predicted;
      }
    }
    for (let c = 0; c < L; c++) {
      for (let j = 0; j < dv; j++) {
        let fromState = 0;
        for (let d = 0; d < dk; d++) {
          fromState +=
            (this.q[c * dk + d] as number) *
            Math.exp(this.gamma[c * dk + d] as number) *
            (S[d * dv + j] as number);
        }
        let fromChunk = 0;
        for (let s = 0; s <= c; s++)
          fromChunk += (this.aqk[c * C + s] as number) * (this.newValues[s * dv + j] as number);
        out[((t0 + c) * H + h) * dv + j] = fromState + fromChunk;
      }
    }
    const last = (L - 1) * dk;
    for (let d = 0; d < dk; d++) {
      const chunkDecay = Math.exp(this.gamma[last + d] as number);
      for (let j = 0; j < dv; j++) {
        let written = 0;
        for (let c = 0; c < L; c++) {
          const toEnd = Math.exp((this.gamma[last + d] as number) - (this.gamma[c * dk + d] as number));
          written += toEnd * (this.k[c * dk + d] as number) * (this.newValues[c * dv + j] as number);
        }
        state[h * dk * dv + d * dv + j] = (S[d * dv + j] as number) * chunkDecay + written;
      }
    }
  }
}
