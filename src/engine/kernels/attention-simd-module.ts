import {
  block,
  brIf,
  compileWasm,
  F64,
  F64_ADD,
  F64_MUL,
  F64X2_ADD,
  F64X2_MUL,
  funcType,
  localGet as get,
  I32,
  I32_ADD,
  I32_EQZ,
  I32_LT_U,
  I32_MUL,
  I32_SHL,
  i32Const as i32c,
  instantiateWasm,
  locals,
  loop,
  localSet as set,
  simd,
  localTee as tee,
  uleb,
  V128,
  V128_ZERO,
  v128Load,
  v128Store,
  type WasmMemory,
  type WasmModule,
  wasmModuleBytes,
} from "../../common/wasm-assembler.js";
import type { AttentionSimd } from "../attention/attention-kernel.js";

/**
 * WebAssembly SIMD inner loops of the attention kernel (attention-kernel.ts), assembled here from
 * their opcodes like the matmul tile (simd-module.ts). All arithmetic is f64x2 on f32 inputs
 * promoted exactly, lane for lane the scalar reference's f64 operations in the same order, so
 * the results are bit-identical to it:
 *
 *   dot4 / dot1(q, qStride, k, kStride, np, hd, s, sStride, scale): for R = 4 / 1 query rows r
 *     (f64 rows at q + r*qStride) and positions p < np (f32 key rows at k + p*kStride):
 *     s[r*sStride + 8p] = ((a0 + a1) + (a2 + a3)) * scale, a_i the sum over d ≡ i (mod 4) of
 *     q[d]*k[d] accumulated in ascending d (lanes [a0, a1] and [a2, a3]); hd a multiple of 4.
 *   vacc2 / vacc1(w, wStride, a, aStride, v, vStride, np, vd): for R = 2 / 1 rows r and p < np in
 *     ascending order, a_r[d] += w_r[p] * v_p[d] (f64 weights at w + r*wStride + 8p, f64
 *     accumulators at a + r*aStride, f32 value rows at v + p*vStride); vd a multiple of 8.
 *
 * Byte addresses are into the imported shared memory (wasm-arena.ts).
 */
export function attentionSimdModuleBytes(): Uint8Array {
  const load64zero = (offset = 0) => simd(0x5d, 3, ...uleb(offset)); // v128.load64_zero
  const promote = simd(0x5f); // f64x2.promote_low_f32x4
  const f64x2splat = simd(0x14);
  const f64x2lane = (l: number) => simd(0x21, l);
  /** base + r * stride, for locals base and stride. */
  const rowAt = (base: number, stride: number, r: number) => [
    ...get(base),
    ...get(stride),
    ...i32c(r),
    ...I32_MUL,
    ...I32_ADD,
  ];
  /** The address on top of the stack plus twice local `bytes` (an f64 offset from an f32 one). */
  const plusTwice = (bytes: number) => [...get(bytes), ...i32c(1), ...I32_SHL, ...I32_ADD];
  const f64load = [0x2b, 0x03, 0x00];
  const f64store = [0x39, 0x03, 0x00];

  /**
   * dotR. Params: 0 q, 1 qStride, 2 k, 3 kStride, 4 np, 5 hd, 6 s, 7 sStride, 8 scale (f64).
   * Locals: 9 p, 10 dk (bytes into the key row), 11 kp (key row), 12 kEnd (hd*4),
   * 13..16 row bases of q, 17..20 row bases of s; v128 21.. accumulators A_r, B_r, then klo, khi.
   */
  const dot = (R: number): number[] => {
    const A = (r: number) => 21 + r;
    const B = (r: number) => 21 + R + r;
    const klo = 21 + 2 * R;
    const khi = klo + 1;
    const setup: number[] = [...get(5), ...i32c(2), ...I32_SHL, ...set(12), ...get(2), ...set(11)];
    for (let r = 0; r < R; r++) {
      setup.push(...rowAt(0, 1, r), ...set(13 + r));
      setup.push(...rowAt(6, 7, r), ...set(17 + r));
    }
    const inner: number[] = [];
    // klo = promote(k[d], k[d+1]); khi = promote(k[d+2], k[d+3])
    inner.push(...get(11), ...get(10), ...I32_ADD, ...load64zero(0), ...promote, ...set(klo));
    inner.push(...get(11), ...get(10), ...I32_ADD, ...load64zero(8), ...promote, ...set(khi));
    for (let r = 0; r < R; r++) {
      // q row address for this d: base + 2*dk (f64 vs f32)
      inner.push(...get(A(r)), ...get(13 + r), ...plusTwice(10), ...v128Load(4, 0));
      inner.push(...get(klo), ...F64X2_MUL, ...F64X2_ADD, ...set(A(r)));
      inner.push(...get(B(r)), ...get(13 + r), ...plusTwice(10), ...v128Load(4, 16));
      inner.push(...get(khi), ...F64X2_MUL, ...F64X2_ADD, ...set(B(r)));
    }
    inner.push(...get(10), ...i32c(16), ...I32_ADD, ...tee(10), ...get(12), ...I32_LT_U, ...brIf(0));
    const perP: number[] = [];
    for (let r = 0; r < R; r++) perP.push(...V128_ZERO, ...set(A(r)), ...V128_ZERO, ...set(B(r)));
    perP.push(...i32c(0), ...set(10), ...loop(inner));
    for (let r = 0; r < R; r++) {
      perP.push(...get(17 + r), ...get(9), ...i32c(3), ...I32_SHL, ...I32_ADD);
      perP.push(...get(A(r)), ...f64x2lane(0), ...get(A(r)), ...f64x2lane(1), ...F64_ADD);
      perP.push(...get(B(r)), ...f64x2lane(0), ...get(B(r)), ...f64x2lane(1), ...F64_ADD);
      perP.push(...F64_ADD, ...get(8), ...F64_MUL, ...f64store);
    }
    perP.push(...get(11), ...get(3), ...I32_ADD, ...set(11));
    perP.push(...get(9), ...i32c(1), ...I32_ADD, ...tee(9), ...get(4), ...I32_LT_U, ...brIf(0));
    const body = [
      ...setup,
      ...i32c(0),
      ...set(9),
      ...block([...get(4), ...I32_EQZ, ...brIf(0)], loop(perP)),
      0x0b,
    ];
    // 12 i32 locals (9..20), then 2R + 2 v128.
    return [...locals([12, I32], [2 * R + 2, V128]), ...body];
  };

  /**
   * vaccR. Params: 0 w, 1 wStride, 2 a, 3 aStride, 4 v, 5 vStride, 6 np, 7 vd.
   * Locals: 8 db (bytes into an f32 value row), 9 p, 10 vp (value row + db), 11 wp (8p),
   * 12..13 accumulator addresses of the rows at db; v128 14.. X_r,j (4R), then v0..v3, ws.
   */
  const vacc = (R: number): number[] => {
    const X = (r: number, j: number) => 14 + 4 * r + j;
    const V = (j: number) => 14 + 4 * R + j;
    const ws = 14 + 4 * R + 4;
    const perP: number[] = [];
    for (let j = 0; j < 4; j++) perP.push(...get(10), ...load64zero(8 * j), ...promote, ...set(V(j)));
    for (let r = 0; r < R; r++) {
      perP.push(...rowAt(0, 1, r), ...get(11), ...I32_ADD, ...f64load);
      perP.push(...f64x2splat, ...set(ws));
      for (let j = 0; j < 4; j++) {
        perP.push(...get(X(r, j)), ...get(ws), ...get(V(j)), ...F64X2_MUL, ...F64X2_ADD, ...set(X(r, j)));
      }
    }
    perP.push(...get(10), ...get(5), ...I32_ADD, ...set(10));
    perP.push(...get(11), ...i32c(8), ...I32_ADD, ...set(11));
    perP.push(...get(9), ...i32c(1), ...I32_ADD, ...tee(9), ...get(6), ...I32_LT_U, ...brIf(0));
    const perDb: number[] = [];
    for (let r = 0; r < R; r++) {
      // accumulator address of row r at db: a + r*aStride + 2*db
      perDb.push(...rowAt(2, 3, r), ...plusTwice(8));
      perDb.push(...set(12 + r));
      for (let j = 0; j < 4; j++) perDb.push(...get(12 + r), ...v128Load(4, 16 * j), ...set(X(r, j)));
    }
    perDb.push(...get(4), ...get(8), ...I32_ADD, ...set(10), ...i32c(0), ...set(11), ...i32c(0), ...set(9));
    perDb.push(...loop(perP));
    for (let r = 0; r < R; r++) {
      for (let j = 0; j < 4; j++) perDb.push(...get(12 + r), ...get(X(r, j)), ...v128Store(4, 16 * j));
    }
    perDb.push(
      ...get(8),
      ...i32c(32),
      ...I32_ADD,
      ...tee(8),
      ...get(7),
      ...i32c(2),
      ...I32_SHL,
      ...I32_LT_U,
      ...brIf(0),
    );
    const body = [
      ...i32c(0),
      ...set(8),
      ...block([...get(6), ...I32_EQZ, ...brIf(0)], [...get(7), ...I32_EQZ, ...brIf(0)], loop(perDb)),
      0x0b,
    ];
    // 6 i32 locals (8..13), then 4R + 5 v128.
    return [...locals([6, I32], [4 * R + 5, V128]), ...body];
  };

  const dotType = funcType([I32, I32, I32, I32, I32, I32, I32, I32, F64], []);
  const vaccType = funcType([I32, I32, I32, I32, I32, I32, I32, I32], []);
  return wasmModuleBytes({
    types: [dotType, vaccType],
    functions: [
      { type: 0, body: dot(4) },
      { type: 0, body: dot(1) },
      { type: 1, body: vacc(2) },
      { type: 1, body: vacc(1) },
    ],
    exports: [
      ["dot4", 0],
      ["dot1", 1],
      ["vacc2", 2],
      ["vacc1", 3],
    ],
  });
}

/** The compiled attention module, or undefined where WebAssembly SIMD is unavailable. */
export function compileAttentionSimd(): WasmModule | undefined {
  return compileWasm(attentionSimdModuleBytes());
}

/** An instance over the shared memory, with an empty region (the pool assigns one). */
export function instantiateAttentionSimd(module: WasmModule, memory: WasmMemory): AttentionSimd {
  const exports = instantiateWasm(module, memory) as Pick<AttentionSimd, "dot4" | "dot1" | "vacc2" | "vacc1">;
  return {
    dot4: exports.dot4,
    dot1: exports.dot1,
    vacc2: exports.vacc2,
    vacc1: exports.vacc1,
    memory,
    base: 0,
    bytes: 0,
  };
}
