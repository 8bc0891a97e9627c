import {
  block,
  brIf,
  compileWasm,
  F32_ADD,
  F32X4_ADD,
  F32X4_MUL,
  F32X4_RELAXED_MADD,
  f32Store,
  funcType,
  localGet as get,
  I32,
  I32_ADD,
  I32_EQZ,
  I32_GE_U,
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
  V128_ZERO,
  v128Load,
  type WasmMemory,
  type WasmModule,
  wasmModuleBytes,
} from "../../common/wasm-assembler.js";

/**
 * A WebAssembly SIMD kernel for the matmul's inner tile, assembled here from its opcodes with
 * the shared pieces of common/wasm-assembler.ts:
 *
 *   tile(K, M, x, w, o, G, ldo): for g < G, m < M, j < 4:
 *     f32 at byte o + m*ldo + 4*(4g + j) = Σ_k x[m*K + k] · w[(4g + j)*K + k]
 *
 * with x, w, o byte offsets into the imported shared memory (see wasm-arena.ts, which also holds
 * the weights and the pool's staged activations), K a multiple of 4 and ldo the output's row
 * stride in bytes, so the tile writes straight into a row-major [M, N] matrix. Each output keeps
 * four f32 partial sums (lanes k mod 4) added as (l0 + l1) + (l2 + l3), so an output depends only
 * on its own row and input, never on M or on the other rows of the tile.
 *
 * `fused` builds each step acc + x·w as f32x4.relaxed_madd (one rounding where the CPU has FMA,
 * which V8 uses in every tier) instead of f32x4.mul then f32x4.add (two roundings); the module
 * then validates only where relaxed SIMD is available (see relaxedSimdAvailable).
 */
export function simdTileModuleBytes(fused: boolean): Uint8Array {
  // Parameters, then locals.
  const [K, M, X, W0, O, G, LDO] = [0, 1, 2, 3, 4, 5, 6];
  const [m, kb, rowBytes, xp, w1, w2, w3, g, op, xp2] = [7, 8, 9, 10, 11, 12, 13, 14, 15, 16];
  const accA = [17, 18, 19, 20];
  const accB = [21, 22, 23, 24];
  const [xv, xv2, wv] = [25, 26, 27];
  const weightRows = [W0, w1, w2, w3];
  /** acc = acc + xv·wv, as the same operations whatever the row's place in the tile. */
  const step = (acc: number, x: number, w: number[]): number[] =>
    fused
      ? [...get(x), ...w, ...get(acc), ...F32X4_RELAXED_MADD, ...set(acc)]
      : [...get(acc), ...get(x), ...w, ...F32X4_MUL, ...F32X4_ADD, ...set(acc)];
  const lane = (l: number) => simd(0x1f, l); // f32x4.extract_lane
  const sum = (acc: number) => [
    ...get(acc),
    ...lane(0),
    ...get(acc),
    ...lane(1),
    ...F32_ADD,
    ...get(acc),
    ...lane(2),
    ...get(acc),
    ...lane(3),
    ...F32_ADD,
    ...F32_ADD,
  ];
  const zero = (accs: number[]) => accs.flatMap((a) => [...V128_ZERO, ...set(a)]);
  const load = (base: number) => [...get(base), ...get(kb), ...I32_ADD, ...v128Load(0, 0)];
  const nextK = [...get(kb), ...i32c(16), ...I32_ADD, ...tee(kb), ...get(rowBytes), ...I32_LT_U, ...brIf(0)];
  /** Stores the four sums of `accs` at the output row whose address `rowAddress` pushes. */
  const store = (rowAddress: number[], accs: number[]) =>
    accs.flatMap((acc, j) => [...rowAddress, ...sum(acc), ...f32Store(4 * j)]);
  // Input rows two at a time: each weight vector loaded once feeds eight independent accumulators.
  // Every output sees the same operations in the same order as in the one-row block below, so its
  // bits do not depend on whether it was paired.
  const pairK = [...load(xp), ...set(xv), ...load(xp2), ...set(xv2)];
  weightRows.forEach((row, j) => {
    pairK.push(...load(row), ...set(wv));
    pairK.push(...step(accA[j] as number, xv, get(wv)), ...step(accB[j] as number, xv2, get(wv)));
  });
  const pairs = block(
    loop(
      [...get(m), ...i32c(1), ...I32_ADD, ...get(M), ...I32_GE_U, ...brIf(1)], // leave when m+1 >= M
      zero([...accA, ...accB]),
      [...i32c(0), ...set(kb), ...get(xp), ...get(rowBytes), ...I32_ADD, ...set(xp2)],
      loop(pairK, nextK),
      store(get(op), accA),
      store([...get(op), ...get(LDO), ...I32_ADD], accB),
      [...get(xp2), ...get(rowBytes), ...I32_ADD, ...set(xp)], // xp += 2 rows
      [...get(op), ...get(LDO), ...I32_ADD, ...get(LDO), ...I32_ADD, ...set(op)], // op += 2 rows
      [...get(m), ...i32c(2), ...I32_ADD, ...set(m), 0x0c, 0x00], // m += 2; br loop
    ),
  );
  // After the pairs at most one input row is left.
  const oneK = [...load(xp), ...set(xv)];
  weightRows.forEach((row, j) => {
    oneK.push(...step(accA[j] as number, xv, load(row)));
  });
  const lastRow = block(
    [...get(m), ...get(M), ...I32_GE_U, ...brIf(0)],
    zero(accA),
    [...i32c(0), ...set(kb)],
    loop(oneK, nextK),
    store(get(op), accA),
  );
  const body = [
    ...[...get(K), ...i32c(2), ...I32_SHL, ...set(rowBytes), ...i32c(0), ...set(g)],
    ...block(
      [...get(G), ...I32_EQZ, ...brIf(0)],
      loop(
        [...get(W0), ...get(rowBytes), ...I32_ADD, ...set(w1)],
        [...get(w1), ...get(rowBytes), ...I32_ADD, ...set(w2)],
        [...get(w2), ...get(rowBytes), ...I32_ADD, ...set(w3)],
        [...i32c(0), ...set(m), ...get(X), ...set(xp), ...get(O), ...set(op)],
        pairs,
        lastRow,
        [...get(w3), ...get(rowBytes), ...I32_ADD, ...set(W0)], // w += 4 rows
        [...get(O), ...i32c(16), ...I32_ADD, ...set(O)], // o += 4 columns
        [...get(g), ...i32c(1), ...I32_ADD, ...tee(g), ...get(G), ...I32_LT_U, ...brIf(0)],
      ),
    ),
    0x0b, // end function
  ];
  return wasmModuleBytes({
    types: [funcType([I32, I32, I32, I32, I32, I32, I32], [])],
    functions: [{ type: 0, body: [...locals([10, I32], [11, V128]), ...body] }],
    exports: [["tile", 0]],
  });
}

export type { WasmMemory, WasmModule };

export interface SimdTile {
  tile: (K: number, M: number, x: number, w: number, o: number, G: number, ldo: number) => void;
  memory: WasmMemory;
  /** This thread's scratch region in the memory: byte offset and size. */
  base: number;
  bytes: number;
}

/**
 * The compiled module, or undefined where WebAssembly SIMD (or, when `fused`, relaxed SIMD) is
 * unavailable.
 */
export function compileSimdTile(fused: boolean): WasmModule | undefined {
  return compileWasm(simdTileModuleBytes(fused));
}

/** An instance over the shared memory (one per thread; `base` is set by the pool). */
export function instantiateTile(module: WasmModule, memory: WasmMemory): SimdTile {
  const exports = instantiateWasm(module, memory) as Pick<SimdTile, "tile">;
  return { tile: exports.tile, memory, base: 0, bytes: 0 };
}
