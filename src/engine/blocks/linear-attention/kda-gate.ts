/**
 * The per-token inputs of KDA that are not plain projections: the decay gate g, the write strength β and
 * the L2 normalization of q and k.
 *
 * Sources followed: fla-org/flash-linear-attention `fla/ops/kda/gate.py` (`naive_kda_gate`) and vLLM
 * `vllm/model_executor/layers/fla/ops/kda.py` (`fused_kda_gate`: softplus switches to the identity above
 * 20, as torch's F.softplus does) for g; vLLM `layers/kda.py` (`b_proj(x).float().sigmoid()`) for β;
 * fla `fla/modules/l2norm.py` (x / sqrt(Σx² + 1e-6)) for the normalization.
 * All arithmetic is float64; each result is rounded once, when stored into its float32 output.
 */
import { sigmoid, softplus } from "../activations.js";
import { expectDims, expectLength } from "../shapes.js";

/**
 * g = −exp(A_log[h]) · softplus(f + dt_bias) per channel, and β = sigmoid(b).
 *
 * Layouts: f [T, H, dk] (f_b_proj(f_a_proj(x)), i.e. [T, H·dk] viewed per head), aLog [H],
 * dtBias [H, dk] (the checkpoint's flat [H·dk]), b [T, H] (b_proj(x)); outputs g [T, H, dk] and
 * beta [T, H]. The checkpoint stores A_log as [1, 1, H, 1]; pass its H values.
 */
export function kdaGate(
  f: Float32Array,
  b: Float32Array,
  aLog: Float32Array,
  dtBias: Float32Array,
  T: number,
  H: number,
  dk: number,
  g: Float32Array,
  beta: Float32Array,
): void {
  expectDims("kdaGate", { T, H, dk });
  expectLength("kdaGate", "f", f, T * H * dk, "[T, H, dk]");
  expectLength("kdaGate", "b", b, T * H, "[T, H]");
  expectLength("kdaGate", "aLog", aLog, H, "[H]");
  expectLength("kdaGate", "dtBias", dtBias, H * dk, "[H, dk]");
  expectLength("kdaGate", "g", g, T * H * dk, "[T, H, dk]");
  expectLength("kdaGate", "beta", beta, T * H, "[T, H]");
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < H; h++) {
      const rate = Math.exp(aLog[h] as number);
      const base = (t * H + h) * dk;
      for (let i = 0; i < dk; i++) {
        g[base + i] = -rate * softplus((f[base + i] as number) + (dtBias[h * dk + i] as number));
      }
      beta[t * H + h] = sigmoid(b[t * H + h] as number);
    }
  }
}

/** fla's l2norm epsilon, added to the sum of squares inside the square root. */
export const L2_NORM_EPS = 1e-6;

/**
 * In place over `rows` vectors of `dim` (rows = T·H for a [T, H, d] tensor):
 * x ← x / sqrt(Σx² + 1e-6) · scale. Use scale = dk^-1/2 for q and 1 for k.
 */
export function l2NormalizeHeads(x: Float32Array, rows: number, dim: number, scale = 1): void {
  expectDims("l2NormalizeHeads", { rows, dim });
  expectLength("l2NormalizeHeads", "x", x, rows * dim, "[rows, dim]");
  for (let r = 0; r < rows; r++) {
    const base = r * dim;
    let sumSquares = 0;
    for (let i = 0; i < dim; i++) sumSquares += (x[base + i] as number) ** 2;
    const factor = scale / Math.sqrt(sumSquares + L2_NORM_EPS);
    for (let i = 0; i < dim; i++) x[base + i] = (x[base + i] as number) * factor;
  }
}
