import type { ParameterDecl } from "../blocks/parameters.js";
import type { HostTensor } from "../loader/host-tensor.js";
import { Rng } from "../tensor/random.js";

/**
 * The seed of tensor `name`'s random weights under model seed `seed` (FNV-1a of "seed/name"), so
 * each tensor's values do not depend on the order tensors are generated in.
 */
export function tensorSeed(seed: number, name: string): number {
  const s = `${seed}/${name}`;
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** Stores an f32 tensor under its HF name. */
export type PutF32 = (name: string, shape: number[], data: Float32Array) => void;

/** A map of f32 tensors and `put`, which stores one under its HF name. */
export function f32Tensors(): { readonly tensors: Map<string, HostTensor>; readonly put: PutF32 } {
  const tensors = new Map<string, HostTensor>();
  return { tensors, put: (name, shape, data) => void tensors.set(name, { dtype: "F32", shape, data }) };
}

/**
 * Writes each declared parameter as a tiny model of seed `seed` draws it: fan-in matrices from the
 * tensor's own seed with standard deviation 1/sqrt(last dimension), ones for norms.
 */
export function putParameters(put: PutF32, seed: number, parameters: readonly ParameterDecl[]): void {
  for (const { name, shape, init } of parameters) {
    const size = shape.reduce((a, b) => a * b, 1);
    const data =
      init === "ones"
        ? filled(size, 1)
        : new Rng(tensorSeed(seed, name)).fillNormal(
            new Float32Array(size),
            1 / Math.sqrt(shape.at(-1) as number),
          );
    put(name, [...shape], data);
  }
}

/** `n` floats, all `value`. */
export function filled(n: number, value: number): Float32Array {
  return new Float32Array(n).fill(value);
}

/** A random unit-norm code of `n` features (normal draws from `rng`, divided by their norm). */
export function unitCode(rng: Rng, n: number): Float32Array {
  const v = new Float64Array(n);
  let norm = 0;
  for (let i = 0; i < n; i++) {
    v[i] = rng.normal();
    norm += (v[i] as number) ** 2;
  }
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (v[i] as number) / Math.sqrt(norm);
  return out;
}

/**
 * The smallest Σ_f (1 - cos(ω_f e)) over distances e in [1, maxDistance): how far a previous-token
 * head's best RoPE score stands above any other distance, per unit of amplitude.
 */
export function nearestRivalGap(invFreq: readonly number[], maxDistance: number): number {
  let min = Number.POSITIVE_INFINITY;
  for (let e = 1; e < maxDistance; e++) {
    let gap = 0;
    for (const w of invFreq) gap += 1 - Math.cos(w * e);
    if (gap < min) min = gap;
  }
  return min;
}
