import {
  compileWasm,
  F32_ADD,
  F32X4_ADD,
  F32X4_MUL,
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
  localSet as set,
  simd,
  localTee as tee,
  uleb,
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
 *   tile(K, M, x, w, o, G): for g < G, m < M, j < 4:
 *     o[(g*M + m)*4 + j] = Σ_k x[m*K + k] · w[(4g + j)*K + k]
 *
 * with x, w, o byte offsets into the imported shared memory (see wasm-arena.ts, which also holds
 * the weights) and K a multiple of 4. Each output keeps
 * four f32 partial sums (lanes k mod 4) added as (l0 + l1) + (l2 + l3), so an output depends only
 * on its own row and input, never on M or on the other rows of the tile.
 */
export function simdTileModuleBytes(): Uint8Array {
  const lane = (l: number) => simd(0x1f, l); // f32x4.extract_lane
  // Locals: 0 K, 1 M, 2 x, 3 w, 4 o, 5 G | 6 m, 7 kb, 8 rowBytes, 9 xp, 10 w1, 11 w2, 12 w3, 13 g
  //         | 14-17 acc, 18 xv, 19-22 acc of the second row, 23 its xv | 24 its xp | 25 wv
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
  const outRow = [...get(4), ...get(6), ...i32c(4), ...I32_SHL, ...I32_ADD]; // o + 16m
  // Input rows two at a time: each weight vector loaded once feeds eight independent accumulators
  // (14-17 for row m, 19-22 for row m+1). Every output sees the same operations in the same order
  // as in the one-row loop below, so its bits do not depend on whether it was paired.
  const pairLoop: number[] = [0x02, 0x40, 0x03, 0x40]; // block, loop
  pairLoop.push(...get(6), ...i32c(1), ...I32_ADD, ...get(1), ...I32_GE_U, 0x0d, 0x01); // leave when m+1 >= M
  for (const acc of [14, 15, 16, 17, 19, 20, 21, 22]) pairLoop.push(...V128_ZERO, ...set(acc));
  pairLoop.push(...i32c(0), ...set(7), ...get(9), ...get(8), ...I32_ADD, ...set(24));
  pairLoop.push(0x03, 0x40); // loop over k
  pairLoop.push(...get(9), ...get(7), ...I32_ADD, ...v128Load(0, 0), ...set(18));
  pairLoop.push(...get(24), ...get(7), ...I32_ADD, ...v128Load(0, 0), ...set(23));
  [3, 10, 11, 12].forEach((rowBase, j) => {
    pairLoop.push(...get(rowBase), ...get(7), ...I32_ADD, ...v128Load(0, 0), ...set(25));
    pairLoop.push(...get(14 + j), ...get(18), ...get(25), ...F32X4_MUL, ...F32X4_ADD, ...set(14 + j));
    pairLoop.push(...get(19 + j), ...get(23), ...get(25), ...F32X4_MUL, ...F32X4_ADD, ...set(19 + j));
  });
  pairLoop.push(...get(7), ...i32c(16), ...I32_ADD, ...tee(7), ...get(8), ...I32_LT_U, 0x0d, 0x00, 0x0b);
  for (let j = 0; j < 8; j++) {
    const acc = j < 4 ? 14 + j : 15 + j;
    pairLoop.push(...outRow, ...sum(acc), 0x38, 0x02, ...uleb(4 * j)); // f32.store align=4 offset=4j
  }
  pairLoop.push(...get(24), ...get(8), ...I32_ADD, ...set(9)); // xp += 2 rows
  pairLoop.push(...get(6), ...i32c(2), ...I32_ADD, ...set(6), 0x0c, 0x00, 0x0b, 0x0b); // m += 2; br loop; end; end
  const body: number[] = [
    ...get(0),
    ...i32c(2),
    ...I32_SHL,
    ...set(8),
    ...i32c(0),
    ...set(13),
    0x02,
    0x40, // block: leave when G == 0
    ...get(5),
    ...I32_EQZ,
    0x0d,
    0x00,
    0x03,
    0x40, // loop over groups of four rows
    ...get(3),
    ...get(8),
    ...I32_ADD,
    ...set(10),
    ...get(10),
    ...get(8),
    ...I32_ADD,
    ...set(11),
    ...get(11),
    ...get(8),
    ...I32_ADD,
    ...set(12),
    ...i32c(0),
    ...set(6),
    ...get(2),
    ...set(9),
    ...pairLoop,
    0x02,
    0x40, // block: leave when m == M (one odd row may be left after the pairs)
    ...get(6),
    ...get(1),
    ...I32_GE_U,
    0x0d,
    0x00,
    0x03,
    0x40, // loop over input rows m
    ...V128_ZERO,
    ...set(14),
    ...V128_ZERO,
    ...set(15),
    ...V128_ZERO,
    ...set(16),
    ...V128_ZERO,
    ...set(17),
    ...i32c(0),
    ...set(7),
    0x03,
    0x40, // loop over k, 4 at a time
    ...get(9),
    ...get(7),
    ...I32_ADD,
    ...v128Load(0, 0),
    ...set(18),
  ];
  [3, 10, 11, 12].forEach((rowBase, j) => {
    body.push(
      ...get(14 + j),
      ...get(18),
      ...get(rowBase),
      ...get(7),
      ...I32_ADD,
      ...v128Load(0, 0),
      ...F32X4_MUL,
      ...F32X4_ADD,
      ...set(14 + j),
    );
  });
  body.push(...get(7), ...i32c(16), ...I32_ADD, ...tee(7), ...get(8), ...I32_LT_U, 0x0d, 0x00, 0x0b);
  for (let j = 0; j < 4; j++) {
    body.push(...outRow, ...sum(14 + j), 0x38, 0x02, ...uleb(4 * j));
  }
  body.push(
    ...get(9),
    ...get(8),
    ...I32_ADD,
    ...set(9),
    ...get(6),
    ...i32c(1),
    ...I32_ADD,
    ...tee(6),
    ...get(1),
    ...I32_LT_U,
    0x0d,
    0x00,
    0x0b, // end loop over m
    0x0b, // end block
    ...get(12),
    ...get(8),
    ...I32_ADD,
    ...set(3), // w += 4 rows
    ...get(4),
    ...get(1),
    ...i32c(4),
    ...I32_SHL,
    ...I32_ADD,
    ...set(4), // o += M*4 floats
    ...get(13),
    ...i32c(1),
    ...I32_ADD,
    ...tee(13),
    ...get(5),
    ...I32_LT_U,
    0x0d,
    0x00,
    0x0b, // end loop over groups
    0x0b, // end block
    0x0b, // end function
  );
  const func = [...locals([8, I32], [10, V128], [1, I32], [1, V128]), ...body];
  return wasmModuleBytes({
    types: [funcType([I32, I32, I32, I32, I32, I32], [])],
    functions: [{ type: 0, body: func }],
    exports: [["tile", 0]],
  });
}

export type { WasmMemory, WasmModule };

export interface SimdTile {
  tile: (K: number, M: number, x: number, w: number, o: number, G: number) => void;
  memory: WasmMemory;
  /** This thread's scratch region in the memory: byte offset and size. */
  base: number;
  bytes: number;
}

/** The compiled module, or undefined where WebAssembly SIMD is unavailable. */
export function compileSimdTile(): WasmModule | undefined {
  return compileWasm(simdTileModuleBytes());
}

/** An instance over the shared memory (one per thread; `base` is set by the pool). */
export function instantiateTile(module: WasmModule, memory: WasmMemory): SimdTile {
  const exports = instantiateWasm(module, memory) as Pick<SimdTile, "tile">;
  return { tile: exports.tile, memory, base: 0, bytes: 0 };
}
