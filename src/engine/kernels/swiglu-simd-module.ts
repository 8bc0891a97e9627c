import {
  brIf,
  compileWasm,
  F64X2_ADD,
  F64X2_MUL,
  funcType,
  localGet as get,
  I32,
  I32_ADD,
  I32_LT_U,
  I32_SHL,
  i32Const as i32c,
  instantiateWasm,
  locals,
  loop,
  localSet as set,
  simd,
  localTee as tee,
  V128,
  v128Load,
  v128Store,
  type WasmMemory,
  type WasmModule,
  wasmModuleBytes,
} from "../../common/wasm-assembler.js";

/** Beyond ±EXP_CLAMP exp(x) is taken at the clamp (below) or as infinity (above). */
export const EXP_CLAMP = 700;
/** 1.5·2^52: adding it rounds an f64 of magnitude below 2^51 to an integer, left in the low bits. */
const SHIFTER = 6755399441055744;
/** ln 2 split so that k·LN2_HI is exact for |k| < 2^11 (fdlibm's constants). */
const LN2_HI = 0.6931471803691238;
const LN2_LO = 1.9082149292705877e-10;
/** Taylor coefficients 1/j! of e^r for j = 0..11: truncation below 7e-15 for |r| <= ln2/2. */
const EXP_COEFFICIENTS = Array.from({ length: 12 }, (_, j) => {
  let f = 1;
  for (let i = 2; i <= j; i++) f *= i;
  return 1 / f;
});

/**
 * A WebAssembly SIMD swiglu, assembled from its opcodes like the matmul tile (simd-module.ts):
 *
 *   swiglu(g, u, count): for i < 4·count, f32 g[i] = (g[i] / (1 + exp(-g[i]))) · u[i]
 *
 * with g, u byte offsets into the imported shared memory. Each value is promoted to f64 exactly
 * and the expression evaluated in f64 in the same order as the plain kernel (swiglu.ts), then
 * rounded to f32 once; only exp differs: 2^k from its exponent bits times a degree-11 polynomial of
 * r = x - k·ln2 (|r| <= ln2/2), about 1e-14 relative to the exact value where Math.exp is within
 * an ulp, so the f32 results agree except where the f64 value falls within that of a rounding
 * boundary (a few in a million). exp(x) for x below -EXP_CLAMP is taken as exp(-EXP_CLAMP), which
 * changes nothing after the f32 rounding (1 + e is 1 either way), and above EXP_CLAMP as infinity;
 * NaN stays NaN.
 */
export function swigluModuleBytes(): Uint8Array {
  const [G, U, COUNT] = [0, 1, 2];
  const [i, end] = [3, 4];
  const [gv, uv, g, x, kf, r, e, kBits] = [5, 6, 7, 8, 9, 10, 11, 12];
  const f64x2 = (v: number) => simd(0x0c, ...new Uint8Array(new Float64Array([v, v]).buffer));
  const i64x2 = (v: number) =>
    simd(0x0c, ...new Uint8Array(new BigInt64Array([BigInt(v), BigInt(v)]).buffer));
  const shuffle = (lanes: number[]) => simd(0x0d, ...lanes);
  const promote = simd(0x5f); // f64x2.promote_low_f32x4
  const demote = simd(0x5e); // f32x4.demote_f64x2_zero
  const neg = simd(0xed);
  const sub = simd(0xf1);
  const div = simd(0xf3);
  // Pseudo-min/max (b < a ? b : a and a < b ? b : a): one instruction each; a NaN in a stays.
  const pmin = simd(0xf6);
  const pmax = simd(0xf7);
  const gt = simd(0x4a);
  const bitselect = simd(0x52);
  const i64Shl = simd(0xcb);
  const i64Add = simd(0xce);
  const highHalf = (v: number) => [
    ...get(v),
    ...get(v),
    ...shuffle([8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7]),
  ];
  /** Pushes f64x2 (g / (1 + exp(-g))) · u for the two f32 lanes that `lo` pushes of gv and uv. */
  const half = (lo: (v: number) => number[]): number[] => {
    const poly = [...f64x2(EXP_COEFFICIENTS[11] as number)];
    for (let j = 10; j >= 0; j--)
      poly.push(...get(r), ...F64X2_MUL, ...f64x2(EXP_COEFFICIENTS[j] as number), ...F64X2_ADD);
    return [
      ...lo(gv),
      ...promote,
      ...tee(g),
      ...neg,
      ...tee(x),
      ...f64x2(EXP_CLAMP),
      ...pmin,
      ...f64x2(-EXP_CLAMP),
      ...pmax,
      ...tee(r), // the clamped x, for now
      // k = x·log2(e) rounded to nearest (even) by adding 1.5·2^52, whose low bits then hold k.
      ...[...f64x2(Math.LOG2E), ...F64X2_MUL, ...f64x2(SHIFTER), ...F64X2_ADD, ...tee(kBits)],
      ...[...f64x2(SHIFTER), ...sub, ...set(kf)],
      ...[...get(r), ...get(kf), ...f64x2(LN2_HI), ...F64X2_MUL, ...sub],
      ...[...get(kf), ...f64x2(LN2_LO), ...F64X2_MUL, ...sub, ...set(r)],
      ...poly,
      // 2^k from its exponent bits (|k| <= 1010, inside the normal range); the shifter's own bits
      // leave through the top.
      ...[...get(kBits), ...i64x2(1023), ...i64Add, ...i32c(52), ...i64Shl],
      ...F64X2_MUL,
      ...set(e),
      ...[...f64x2(Number.POSITIVE_INFINITY), ...get(e), ...get(x), ...f64x2(EXP_CLAMP), ...gt, ...bitselect],
      ...set(e),
      ...[...get(g), ...f64x2(1), ...get(e), ...F64X2_ADD, ...div],
      ...lo(uv),
      ...promote,
      ...F64X2_MUL,
    ];
  };
  const body = [
    ...[...i32c(0), ...set(i), ...get(COUNT), ...i32c(4), ...I32_SHL, ...set(end)],
    ...[...get(i), ...get(end), ...I32_LT_U, 0x04, 0x40], // if i < end
    ...loop(
      [...get(G), ...get(i), ...I32_ADD, ...v128Load(0, 0), ...set(gv)],
      [...get(U), ...get(i), ...I32_ADD, ...v128Load(0, 0), ...set(uv)],
      [...get(G), ...get(i), ...I32_ADD], // the store's address
      half(get),
      demote,
      half(highHalf),
      demote,
      shuffle([0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]),
      v128Store(0, 0),
      [...get(i), ...i32c(16), ...I32_ADD, ...tee(i), ...get(end), ...I32_LT_U, ...brIf(0)],
    ),
    0x0b, // end if
    0x0b, // end function
  ];
  return wasmModuleBytes({
    types: [funcType([I32, I32, I32], [])],
    functions: [{ type: 0, body: [...locals([2, I32], [8, V128]), ...body] }],
    exports: [["swiglu", 0]],
  });
}

export interface SwigluSimd {
  swiglu: (g: number, u: number, count: number) => void;
}

/** The compiled module, or undefined where WebAssembly SIMD is unavailable. */
export function compileSwigluSimd(): WasmModule | undefined {
  return compileWasm(swigluModuleBytes());
}

/** An instance over the shared memory (one per thread). */
export function instantiateSwigluSimd(module: WasmModule, memory: WasmMemory): SwigluSimd {
  return instantiateWasm(module, memory) as SwigluSimd;
}
