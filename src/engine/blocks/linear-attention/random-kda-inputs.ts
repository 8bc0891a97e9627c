/**
 * Seeded KDA inputs shaped like a real layer's, for tests and benchmarks: q and k L2-normalized (q also
 * scaled by dk^-1/2), g and β from `kdaGate` with A_log and dt_bias drawn the way fla initializes them
 * (A_log = log U(1, 16); dt_bias = softplus⁻¹(dt) with log dt uniform in [log 0.001, log 0.1]).
 */
import type { Rng } from "../../tensor/random.js";
import { kdaGate, l2NormalizeHeads } from "./kda-gate.js";
import type { KdaInputs } from "./kda-recurrence.js";

export interface KdaShape {
  T: number;
  H: number;
  dk: number;
  dv: number;
}

/**
 * `gateInputScale` is the spread of the gate projection f: 1 gives the mild decays of a freshly
 * initialized layer (g mostly in [−0.5, 0]); larger values give strong decays, g = −exp(A_log)·softplus(f +
 * dt_bias) with exp(A_log) up to 16.
 */
export function randomKdaInputs(rng: Rng, shape: KdaShape, gateInputScale = 1): KdaInputs {
  const { T, H, dk, dv } = shape;
  const q = rng.fillNormal(new Float32Array(T * H * dk), 1);
  const k = rng.fillNormal(new Float32Array(T * H * dk), 1);
  const v = rng.fillNormal(new Float32Array(T * H * dv), 1);
  l2NormalizeHeads(q, T * H, dk, dk ** -0.5);
  l2NormalizeHeads(k, T * H, dk);
  const f = rng.fillNormal(new Float32Array(T * H * dk), gateInputScale);
  const b = rng.fillNormal(new Float32Array(T * H), 1);
  const aLog = Float32Array.from({ length: H }, () => Math.log(1 + 15 * rng.next()));
  const dtBias = Float32Array.from({ length: H * dk }, () => {
    const dt = Math.max(1e-4, Math.exp(Math.log(0.001) + rng.next() * (Math.log(0.1) - Math.log(0.001))));
    return dt + Math.log(-Math.expm1(-dt));
  });
  const g = new Float32Array(T * H * dk);
  const beta = new Float32Array(T * H);
  kdaGate(f, b, aLog, dtBias, T, H, dk, g, beta);
  return { q, k, v, g, beta };
}

/** A state [H, dk, dv] as a previous stretch of the sequence would leave it. */
export function randomKdaState(rng: Rng, shape: KdaShape): Float32Array {
  return rng.fillNormal(new Float32Array(shape.H * shape.dk * shape.dv), 0.5);
}
