/**
 * A WebAssembly SIMD kernel for the matmul's inner tile, assembled here from its opcodes (no
 * assembler package is needed for 60 instructions):
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
  const i32c = (v: number) => [0x41, v]; // small non-negative constants only (< 64)
  const add = [0x6a];
  const shl = [0x74];
  const ltU = [0x49];
  const geU = [0x4f];
  const v128load = [0xfd, 0x00, 0x00, 0x00];
  const f32x4add = [0xfd, 0xe4, 0x01];
  const f32x4mul = [0xfd, 0xe6, 0x01];
  const lane = (l: number) => [0xfd, 0x1f, l];
  const f32add = [0x92];
  const zero = [0xfd, 0x0c, ...new Array(16).fill(0)];
  const eqz = [0x45];
  // Locals: 0 K, 1 M, 2 x, 3 w, 4 o, 5 G | 6 m, 7 kb, 8 rowBytes, 9 xp, 10 w1, 11 w2, 12 w3, 13 g
  //         | 14-17 acc, 18 xv, 19-22 acc of the second row, 23 its xv | 24 its xp | 25 wv
  const sum = (acc: number) => [
    ...get(acc),
    ...lane(0),
    ...get(acc),
    ...lane(1),
    ...f32add,
    ...get(acc),
    ...lane(2),
    ...get(acc),
    ...lane(3),
    ...f32add,
    ...f32add,
  ];
  // Input rows two at a time: each weight vector loaded once feeds eight independent accumulators
  // (14-17 for row m, 19-22 for row m+1). Every output sees the same operations in the same order
  // as in the one-row loop below, so its bits do not depend on whether it was paired.
  const pairLoop: number[] = [0x02, 0x40, 0x03, 0x40]; // block, loop
  pairLoop.push(...get(6), ...i32c(1), ...add, ...get(1), ...geU, 0x0d, 0x01); // leave when m+1 >= M
  for (const acc of [14, 15, 16, 17, 19, 20, 21, 22]) pairLoop.push(...zero, ...set(acc));
  pairLoop.push(...i32c(0), ...set(7), ...get(9), ...get(8), ...add, ...set(24));
  pairLoop.push(0x03, 0x40); // loop over k
  pairLoop.push(...get(9), ...get(7), ...add, ...v128load, ...set(18));
  pairLoop.push(...get(24), ...get(7), ...add, ...v128load, ...set(23));
  [3, 10, 11, 12].forEach((rowBase, j) => {
    pairLoop.push(...get(rowBase), ...get(7), ...add, ...v128load, ...set(25));
    pairLoop.push(...get(14 + j), ...get(18), ...get(25), ...f32x4mul, ...f32x4add, ...set(14 + j));
    pairLoop.push(...get(19 + j), ...get(23), ...get(25), ...f32x4mul, ...f32x4add, ...set(19 + j));
  });
  pairLoop.push(...get(7), ...i32c(16), ...add, ...tee(7), ...get(8), ...ltU, 0x0d, 0x00, 0x0b);
  for (let j = 0; j < 8; j++) {
    const acc = j < 4 ? 14 + j : 15 + j;
    pairLoop.push(...get(4), ...get(6), ...i32c(4), ...shl, ...add, ...sum(acc), 0x38, 0x02, ...leb(4 * j));
  }
  pairLoop.push(...get(24), ...get(8), ...add, ...set(9)); // xp += 2 rows
  pairLoop.push(...get(6), ...i32c(2), ...add, ...set(6), 0x0c, 0x00, 0x0b, 0x0b); // m += 2; br loop; end; end
  const body: number[] = [
    ...get(0),
    ...i32c(2),
    ...shl,
    ...set(8),
    ...i32c(0),
    ...set(13),
    0x02,
    0x40, // block: leave when G == 0
    ...get(5),
    ...eqz,
    0x0d,
    0x00,
    0x03,
    0x40, // loop over groups of four rows
    ...get(3),
    ...get(8),
    ...add,
    ...set(10),
    ...get(10),
    ...get(8),
    ...add,
    ...set(11),
    ...get(11),
    ...get(8),
    ...add,
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
    ...geU,
    0x0d,
    0x00,
    0x03,
    0x40, // loop over input rows m
    ...zero,
    ...set(14),
    ...zero,
    ...set(15),
    ...zero,
    ...set(16),
    ...zero,
    ...set(17),
    ...i32c(0),
    ...set(7),
    0x03,
    0x40, // loop over k, 4 at a time
    ...get(9),
    ...get(7),
    ...add,
    ...v128load,
    ...set(18),
  ];
  [3, 10, 11, 12].forEach((rowBase, j) => {
    body.push(
      ...get(14 + j),
      ...get(18),
      ...get(rowBase),
      ...get(7),
      ...add,
      ...v128load,
      ...f32x4mul,
      ...f32x4add,
      ...set(14 + j),
    );
  });
  body.push(...get(7), ...i32c(16), ...add, ...tee(7), ...get(8), ...ltU, 0x0d, 0x00, 0x0b);
  for (let j = 0; j < 4; j++) {
    body.push(
      ...get(4),
      ...get(6),
      ...i32c(4),
      ...shl,
      ...add,
      ...get(14 + j),
      ...lane(0),
      ...get(14 + j),
      ...lane(1),
      ...f32add,
      ...get(14 + j),
      ...lane(2),
      ...get(14 + j),
      ...lane(3),
      ...f32add,
      ...f32add,
      0x38,
      0x02,
      ...leb(4 * j), // f32.store align=4 offset=4j
    );
  }
  body.push(
    ...get(9),
    ...get(8),
    ...add,
    ...set(9),
    ...get(6),
    ...i32c(1),
    ...add,
    ...tee(6),
    ...get(1),
    ...ltU,
    0x0d,
    0x00,
    0x0b, // end loop over m
    0x0b, // end block
    ...get(12),
    ...get(8),
    ...add,
    ...set(3), // w += 4 rows
    ...get(4),
    ...get(1),
    ...i32c(4),
    ...shl,
    ...add,
    ...set(4), // o += M*4 floats
    ...get(13),
    ...i32c(1),
    ...add,
    ...tee(13),
    ...get(5),
    ...ltU,
    0x0d,
    0x00,
    0x0b, // end loop over groups
    0x0b, // end block
    0x0b, // end function
  );
  const locals = [0x04, 0x08, 0x7f, 0x0a, 0x7b, 0x01, 0x7f, 0x01, 0x7b];
  const func = [...locals, ...body];
  const code = [0x01, ...leb(func.length), ...func];
  const section = (id: number, content: number[]) => [id, ...leb(content.length), ...content];
  const name = (s: string) => [s.length, ...Array.from(s, (c) => c.charCodeAt(0))];
  return new Uint8Array([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    ...section(1, [0x01, 0x60, 0x06, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x00]),
    // Imports env.memory: shared, 1 to 65536 pages (the process's weight arena).
    ...section(2, [0x01, ...name("env"), ...name("memory"), 0x02, 0x03, 0x01, ...leb(65536)]),
    ...section(3, [0x01, 0x00]),
    ...section(7, [0x01, ...name("tile"), 0x00, 0x00]),
    ...section(10, code),
  ]);
}

/** The few WebAssembly types used here (this project's TypeScript lib has no DOM/wasm typings). */
export interface WasmMemory {
  readonly buffer: ArrayBufferLike;
}

/** A compiled module: opaque, and structured-cloneable to worker threads. */
export type WasmModule = object & { readonly __wasmModule?: never };

export interface SimdTile {
  tile: (K: number, M: number, x: number, w: number, o: number, G: number) => void;
  memory: WasmMemory;
  /** This thread's scratch region in the memory: byte offset and size. */
  base: number;
  bytes: number;
}

interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: object) => { exports: unknown };
}

const wasm = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;

/** The compiled module, or undefined where WebAssembly SIMD is unavailable. */
export function compileSimdTile(): WasmModule | undefined {
  const bytes = simdTileModuleBytes();
  if (wasm === undefined || !wasm.validate(bytes)) return undefined;
  return new wasm.Module(bytes);
}

/** An instance over the shared memory (one per thread; `base` is set by the pool). */
export function instantiateTile(module: WasmModule, memory: WasmMemory): SimdTile {
  const exports = new (wasm as WasmApi).Instance(module, { env: { memory } }).exports as Pick<
    SimdTile,
    "tile"
  >;
  return { tile: exports.tile, memory, base: 0, bytes: 0 };
}
