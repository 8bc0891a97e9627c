import { encodeMxfp4, float32ToBf16, floatToFp8Tile128 } from "../../formats/index.js";
import { declared, type ParameterDecl, type Parameters } from "../blocks/parameters.js";
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

/** How a tiny model stores its matrices: f32, bf16, FP8 E4M3 with 128x128 block scales, or MXFP4. */
export type TinyDtype = "f32" | "bf16" | "fp8" | "mxfp4";

/** A tiny generator's own rules over declared parameters (see TinyInit). */
export interface TinyDraw {
  /** The std of "fan-in" and "embedding" draws in place of theirs (the llama family's 0.02). */
  readonly std?: number;
  /** How "matrix" and "stacked" parameters are stored (default f32); other tensors stay f32. */
  readonly storage?: TinyDtype;
  /** Every parameter zero, whatever its init (a constructed model whose circuit writes what it uses). */
  readonly zeros?: boolean;
}

/**
 * Writes each declared parameter into `tensors` as a tiny model of seed `seed` draws it, every
 * tensor from its own seed (tensorSeed of its name, or of its seedName), stored as `draw` says.
 */
export function putParameters(
  tensors: Map<string, HostTensor>,
  seed: number,
  parameters: Parameters | readonly ParameterDecl[],
  draw: TinyDraw = {},
): void {
  const list = Array.isArray(parameters)
    ? (parameters as readonly ParameterDecl[])
    : declared(parameters as Parameters);
  for (const p of list) {
    if (p.dtype === "i32") {
      tensors.set(p.name, { dtype: "I32", shape: [...p.shape], data: tinyIds(p) });
      continue;
    }
    const values = draw.zeros
      ? new Float32Array(p.shape.reduce((a, b) => a * b, 1))
      : tinyValues(p, seed, draw.std);
    if (p.dtype === "f32") tensors.set(p.name, { dtype: "F32", shape: [...p.shape], data: values });
    else storeMatrix(tensors, p.name, p.shape, values, draw.storage ?? "f32");
  }
}

/** A table's declared ids as I32's little-endian bytes. */
function tinyIds(p: ParameterDecl): Uint8Array {
  const { init } = p;
  if (typeof init !== "object" || !("ids" in init)) throw new Error(`unreachable: ${p.name} declares no ids`);
  const size = p.shape.reduce((a, b) => a * b, 1);
  const ids = Int32Array.from({ length: size }, (_, i) => init.ids(i));
  return new Uint8Array(ids.buffer);
}

/** The f32 values a tiny model of seed `seed` gives parameter `p`. */
function tinyValues(p: ParameterDecl, seed: number, std: number | undefined): Float32Array {
  const size = p.shape.reduce((a, b) => a * b, 1);
  const { init } = p;
  if (init === "ones") return filled(size, 1);
  if (init === "zeros") return new Float32Array(size);
  const rng = new Rng(tensorSeed(seed, p.seedName ?? p.name));
  if (typeof init === "object" && "uniform" in init)
    return Float32Array.from({ length: size }, () => init.uniform(rng.next()));
  if (typeof init === "object" && "ids" in init) throw new Error(`unreachable: ${p.name} is a table of ids`);
  const sd =
    typeof init === "object"
      ? init.std
      : (std ?? (init === "embedding" ? 1 : 1 / Math.sqrt(p.shape.at(-1) as number)));
  return rng.fillNormal(new Float32Array(size), sd);
}

/** Stores the matrix (or stack of matrices) `name` of f32 `values` in `dtype`, as checkpoints do. */
function storeMatrix(
  tensors: Map<string, HostTensor>,
  name: string,
  shape: readonly number[],
  values: Float32Array,
  dtype: TinyDtype,
): void {
  const cols = shape.at(-1) as number;
  const lead = shape.slice(0, -1);
  if (dtype === "f32") tensors.set(name, { dtype: "F32", shape: [...shape], data: values });
  else if (dtype === "bf16")
    tensors.set(name, { dtype: "BF16", shape: [...shape], data: float32ToBf16(values) });
  else if (dtype === "mxfp4") {
    const { blocks, scales } = encodeMxfp4(values, name);
    tensors.set(`${name}_blocks`, { dtype: "U8", shape: [...lead, cols / 32, 16], data: blocks });
    tensors.set(`${name}_scales`, { dtype: "U8", shape: [...lead, cols / 32], data: scales });
  } else {
    if (shape.length !== 2) throw new Error(`unreachable: tiny FP8 of the stacked ${name}`);
    const rows = shape[0] as number;
    const { elements, scaleInv } = floatToFp8Tile128(values, rows, cols);
    tensors.set(name, { dtype: "F8_E4M3", shape: [rows, cols], data: elements });
    tensors.set(`${name}_scale_inv`, {
      dtype: "F32",
      shape: [Math.ceil(rows / 128), Math.ceil(cols / 128)],
      data: scaleInv,
    });
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
