import type { AttentionSimd } from "../attention/attention-kernel.js";
import type { WasmMemory, WasmModule } from "./simd-module.js";

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
  const leb = (n: number): number[] => {
    const out: number[] = [];
    do {
      let byte = n & 0x7f;
      n >>>= 7;
      if (n !== 0) byte |= 0x80;
      out.push(byte);
    } while (n !== 0);
    return out;
  };
  const get = (i: number) => [0x20, i];
  const set = (i: number) => [0x21, i];
  const tee = (i: number) => [0x22, i];
  const i32c = (v: number) => [0x41, ...leb(v)]; // non-negative constants below 64 only
  const add = [0x6a];
  const mul = [0x6c];
  const shl = [0x74];
  const ltU = [0x49];
  const eqz = [0x45];
  const mem = (align: number, offset: number) => [align, ...leb(offset)];
  const v128load = (offset = 0) => [0xfd, 0x00, ...mem(4, offset)];
  const v128store = (offset = 0) => [0xfd, 0x0b, ...mem(4, offset)];
  const load64zero = (offset = 0) => [0xfd, 0x5d, ...mem(3, offset)];
  const promote = [0xfd, 0x5f];
  const f64x2splat = [0xfd, 0x14];
  const f64x2lane = (l: number) => [0xfd, 0x21, l];
  const f64x2add = [0xfd, 0xf0, 0x01];
  const f64x2mul = [0xfd, 0xf2, 0x01];
  const f64load = [0x2b, 0x03, 0x00];
  const f64store = [0x39, 0x03, 0x00];
  const f64add = [0xa0];
  const f64mul = [0xa2];
  const zero = [0xfd, 0x0c, ...new Array(16).fill(0)];
  const block = (...body: number[][]) => [0x02, 0x40, ...body.flat(), 0x0b];
  const loop = (...body: number[][]) => [0x03, 0x40, ...body.flat(), 0x0b];
  const brIf = (depth: number) => [0x0d, depth];

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
    const setup: number[] = [...get(5), ...i32c(2), ...shl, ...set(12), ...get(2), ...set(11)];
    for (let r = 0; r < R; r++) {
      setup.push(...get(0), ...get(1), ...i32c(r), ...mul, ...add, ...set(13 + r));
      setup.push(...get(6), ...get(7), ...i32c(r), ...mul, ...add, ...set(17 + r));
    }
    const inner: number[] = [];
    // klo = promote(k[d], k[d+1]); khi = promote(k[d+2], k[d+3])
    inner.push(...get(11), ...get(10), ...add, ...load64zero(0), ...promote, ...set(klo));
    inner.push(...get(11), ...get(10), ...add, ...load64zero(8), ...promote, ...set(khi));
    for (let r = 0; r < R; r++) {
      // q row address for this d: base + 2*dk (f64 vs f32)
      inner.push(...get(A(r)), ...get(13 + r), ...get(10), ...i32c(1), ...shl, ...add, ...v128load(0));
      inner.push(...get(klo), ...f64x2mul, ...f64x2add, ...set(A(r)));
      inner.push(...get(B(r)), ...get(13 + r), ...get(10), ...i32c(1), ...shl, ...add, ...v128load(16));
      inner.push(...get(khi), ...f64x2mul, ...f64x2add, ...set(B(r)));
    }
    inner.push(...get(10), ...i32c(16), ...add, ...tee(10), ...get(12), ...ltU, ...brIf(0));
    const perP: number[] = [];
    for (let r = 0; r < R; r++) perP.push(...zero, ...set(A(r)), ...zero, ...set(B(r)));
    perP.push(...i32c(0), ...set(10), ...loop(inner));
    for (let r = 0; r < R; r++) {
      perP.push(...get(17 + r), ...get(9), ...i32c(3), ...shl, ...add);
      perP.push(...get(A(r)), ...f64x2lane(0), ...get(A(r)), ...f64x2lane(1), ...f64add);
      perP.push(...get(B(r)), ...f64x2lane(0), ...get(B(r)), ...f64x2lane(1), ...f64add);
      perP.push(...f64add, ...get(8), ...f64mul, ...f64store);
    }
    perP.push(...get(11), ...get(3), ...add, ...set(11));
    perP.push(...get(9), ...i32c(1), ...add, ...tee(9), ...get(4), ...ltU, ...brIf(0));
    const body = [
      ...setup,
      ...i32c(0),
      ...set(9),
      ...block([...get(4), ...eqz, ...brIf(0)], loop(perP)),
      0x0b,
    ];
    // 12 i32 locals (9..20), then 2R + 2 v128.
    return [0x02, 0x0c, 0x7f, ...leb(2 * R + 2), 0x7b, ...body];
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
      perP.push(...get(0), ...get(1), ...i32c(r), ...mul, ...add, ...get(11), ...add, ...f64load);
      perP.push(...f64x2splat, ...set(ws));
      for (let j = 0; j < 4; j++) {
        perP.push(...get(X(r, j)), ...get(ws), ...get(V(j)), ...f64x2mul, ...f64x2add, ...set(X(r, j)));
      }
    }
    perP.push(...get(10), ...get(5), ...add, ...set(10));
    perP.push(...get(11), ...i32c(8), ...add, ...set(11));
    perP.push(...get(9), ...i32c(1), ...add, ...tee(9), ...get(6), ...ltU, ...brIf(0));
    const perDb: number[] = [];
    for (let r = 0; r < R; r++) {
      // accumulator address of row r at db: a + r*aStride + 2*db
      perDb.push(...get(2), ...get(3), ...i32c(r), ...mul, ...add, ...get(8), ...i32c(1), ...shl, ...add);
      perDb.push(...set(12 + r));
      for (let j = 0; j < 4; j++) perDb.push(...get(12 + r), ...v128load(16 * j), ...set(X(r, j)));
    }
    perDb.push(...get(4), ...get(8), ...add, ...set(10), ...i32c(0), ...set(11), ...i32c(0), ...set(9));
    perDb.push(...loop(perP));
    for (let r = 0; r < R; r++) {
      for (let j = 0; j < 4; j++) perDb.push(...get(12 + r), ...get(X(r, j)), ...v128store(16 * j));
    }
    perDb.push(...get(8), ...i32c(32), ...add, ...tee(8), ...get(7), ...i32c(2), ...shl, ...ltU, ...brIf(0));
    const body = [
      ...i32c(0),
      ...set(8),
      ...block([...get(6), ...eqz, ...brIf(0)], [...get(7), ...eqz, ...brIf(0)], loop(perDb)),
      0x0b,
    ];
    // 6 i32 locals (8..13), then 4R + 5 v128.
    return [0x02, 0x06, 0x7f, ...leb(4 * R + 5), 0x7b, ...body];
  };

  const funcs = [dot(4), dot(1), vacc(2), vacc(1)];
  const code = [funcs.length, ...funcs.flatMap((f) => [...leb(f.length), ...f])];
  const section = (id: number, content: number[]) => [id, ...leb(content.length), ...content];
  const name = (s: string) => [s.length, ...Array.from(s, (c) => c.charCodeAt(0))];
  const i32 = 0x7f;
  const f64 = 0x7c;
  const types = [
    0x02,
    ...[0x60, 0x09, i32, i32, i32, i32, i32, i32, i32, i32, f64, 0x00],
    ...[0x60, 0x08, i32, i32, i32, i32, i32, i32, i32, i32, 0x00],
  ];
  const exportsList: [string, number][] = [
    ["dot4", 0],
    ["dot1", 1],
    ["vacc2", 2],
    ["vacc1", 3],
  ];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, types),
    // Imports env.memory: shared, 1 to 65536 pages (the process's arena).
    ...section(2, [0x01, ...name("env"), ...name("memory"), 0x02, 0x03, 0x01, ...leb(65536)]),
    ...section(3, [0x04, 0x00, 0x00, 0x01, 0x01]),
    ...section(7, [exportsList.length, ...exportsList.flatMap(([n, i]) => [...name(n), 0x00, i])]),
    ...section(10, code),
  ]);
}

interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: object) => { exports: unknown };
}

const wasm = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;

/** The compiled attention module, or undefined where WebAssembly SIMD is unavailable. */
export function compileAttentionSimd(): WasmModule | undefined {
  const bytes = attentionSimdModuleBytes();
  if (wasm === undefined || !wasm.validate(bytes)) return undefined;
  return new wasm.Module(bytes);
}

/** An instance over the shared memory, with an empty region (the pool assigns one). */
export function instantiateAttentionSimd(module: WasmModule, memory: WasmMemory): AttentionSimd {
  const exports = new (wasm as WasmApi).Instance(module, { env: { memory } }).exports as Pick<
    AttentionSimd,
    "dot4" | "dot1" | "vacc2" | "vacc1"
  >;
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
