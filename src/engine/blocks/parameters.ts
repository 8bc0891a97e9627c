import type { WeightSource } from "../loader/weight-source.js";
import type { Weight } from "../tensor/weight.js";

/**
 * How a tiny model initialises a parameter, from the tensor's own seed (tiny/weights.ts):
 * - "fan-in": a projection, normal draws of std 1/sqrt(last dimension);
 * - "embedding": normal draws of std 1;
 * - "ones" / "zeros": norm scales and shifts;
 * - { std }: normal draws of that std (biases, sinks, gates), the same in every tiny generator;
 * - { uniform }: uniform draws u in [0, 1), each mapped (a decay's log, an inverse softplus).
 * A generator may draw "fan-in" and "embedding" at its own std (the llama family's 0.02).
 */
export type TinyInit =
  | "fan-in"
  | "embedding"
  | "ones"
  | "zeros"
  | { readonly std: number }
  | { readonly uniform: (u: number) => number }
  /** An integer table's entries by flat index (a hash-routing table's expert ids). */
  | { readonly ids: (index: number) => number };

/**
 * How a parameter is stored and read: "matrix" [rows, cols] in the checkpoint's weight dtype (f32,
 * bf16, f16, FP8 with block scales, MXFP4 blocks), read as a Weight; "stacked" [count, rows, cols]
 * as gpt-oss stores its experts, read as one Weight per matrix; "f32" any other tensor, decoded to
 * f32; "i32" a table of ids (stored I32 or I64), read as int32.
 */
export type ParameterDtype = "matrix" | "stacked" | "f32" | "i32";

/** One parameter a block reads: its checkpoint name, its shape from the config, dtype and tiny initialisation. */
export interface ParameterDecl {
  readonly name: string;
  readonly shape: readonly number[];
  readonly dtype: ParameterDtype;
  readonly init: TinyInit;
  /**
   * The name whose seed draws the tiny values, where it is not `name` (a family whose tiny
   * weights were first drawn under another name keeps its bytes).
   */
  readonly seedName?: string;
}

type Decl<D extends ParameterDtype> = ParameterDecl & { readonly dtype: D };

/** A matrix `<base>.weight` [rows, cols], by default drawn as a projection. */
export function matrixParam(
  base: string,
  rows: number,
  cols: number,
  init: TinyInit = "fan-in",
): Decl<"matrix"> {
  return { name: `${base}.weight`, shape: [rows, cols], dtype: "matrix", init };
}

/** An f32 tensor `name` of `shape` (a vector when one dimension). */
export function f32Param(name: string, shape: readonly number[], init: TinyInit): Decl<"f32"> {
  return { name, shape, dtype: "f32", init };
}

/** A table of ids `name` of `shape`, its tiny entries `ids` by flat index. */
export function idsParam(
  name: string,
  shape: readonly number[],
  ids: (index: number) => number,
): Decl<"i32"> {
  return { name, shape, dtype: "i32", init: { ids } };
}

/** `count` matrices [rows, cols] stacked in the one tensor `name`, each drawn as a projection. */
export function stackedParam(name: string, count: number, rows: number, cols: number): Decl<"stacked"> {
  return { name, shape: [count, rows, cols], dtype: "stacked", init: "fan-in" };
}

/** A block's parameters by role; roles the config leaves out are absent. */
export type Parameters = Readonly<Record<string, ParameterDecl | undefined>>;

type BoundValue<D> = D extends { readonly dtype: "matrix" }
  ? Weight
  : D extends { readonly dtype: "stacked" }
    ? Weight[]
    : D extends { readonly dtype: "i32" }
      ? Int32Array
      : Float32Array;

type PresentKeys<P> = { [K in keyof P]-?: undefined extends P[K] ? never : K }[keyof P];

/**
 * What binding `P` to a checkpoint gives: a Weight per matrix, Weights per stack, f32 otherwise;
 * a role the config may leave out is optional.
 */
export type Bound<P extends Parameters> = { readonly [K in PresentKeys<P>]: BoundValue<P[K]> } & {
  readonly [K in Exclude<keyof P, PresentKeys<P>>]?: BoundValue<Exclude<P[K], undefined>>;
};

/**
 * Reads each declared parameter from `w` (shapes checked, each read recorded, so the loader names
 * missing, mis-shaped and unused tensors).
 */
export function bindParameters<P extends Parameters>(w: WeightSource, parameters: P): Bound<P> {
  const out: Record<string, unknown> = {};
  for (const [role, p] of Object.entries(parameters)) {
    if (p !== undefined) out[role] = bindOne(w, p);
  }
  return out as Bound<P>;
}

function bindOne(w: WeightSource, p: ParameterDecl): Weight | Weight[] | Float32Array | Int32Array {
  const [a, b, c] = p.shape as [number, number, number];
  if (p.dtype === "matrix") return w.matrix(matrixBase(p.name), a, b);
  if (p.dtype === "stacked") return w.stackedMatrices(p.name, a, b, c);
  if (p.dtype === "i32") return w.indices(p.name, p.shape);
  return w.tensor(p.name, p.shape);
}

/** `<base>` of a matrix named `<base>.weight` (what WeightSource.matrix reads its forms under). */
export function matrixBase(name: string): string {
  return name.endsWith(".weight") ? name.slice(0, -".weight".length) : name;
}

/** The declarations of `parameters` present under the config, in role order. */
export function declared(parameters: Parameters): ParameterDecl[] {
  return Object.values(parameters).filter((p): p is ParameterDecl => p !== undefined);
}
