import { setFlagsFromString } from "node:v8";
import { wasmApi } from "./wasm-runtime.js";

export {
  compileWasm,
  instantiateWasm,
  type WasmApi,
  type WasmMemory,
  type WasmModule,
  type WasmSharedMemory,
  type WasmUnsharedMemory,
  wasmApi,
} from "./wasm-runtime.js";

/**
 * The pieces the hand-assembled WebAssembly SIMD kernels share: LEB128 encoders, a few
 * instructions as byte arrays, and the framing of a module that imports one shared memory.
 * Hand-written: no assembler package is needed for a few small loops.
 */

/** Unsigned LEB128 of a non-negative integer below 2^32. */
export function uleb(n: number): number[] {
  const out: number[] = [];
  let rest = n >>> 0;
  do {
    let byte = rest & 0x7f;
    rest >>>= 7;
    if (rest !== 0) byte |= 0x80;
    out.push(byte);
  } while (rest !== 0);
  return out;
}

/** Signed LEB128 of a 32-bit integer. */
export function sleb(n: number): number[] {
  const out: number[] = [];
  let rest = n | 0;
  for (;;) {
    const byte = rest & 0x7f;
    rest >>= 7;
    const done = (rest === 0 && (byte & 0x40) === 0) || (rest === -1 && (byte & 0x40) !== 0);
    out.push(done ? byte : byte | 0x80);
    if (done) return out;
  }
}

export const localGet = (i: number): number[] => [0x20, ...uleb(i)];
export const localSet = (i: number): number[] => [0x21, ...uleb(i)];
export const localTee = (i: number): number[] => [0x22, ...uleb(i)];
export const i32Const = (v: number): number[] => [0x41, ...sleb(v)];

export const I32_EQZ = [0x45];
export const I32_EQ = [0x46];
export const I32_LT_S = [0x48];
export const I32_LT_U = [0x49];
export const I32_GT_S = [0x4a];
export const I32_GE_U = [0x4f];
export const I32_ADD = [0x6a];
export const I32_SUB = [0x6b];
export const I32_MUL = [0x6c];
export const I32_SHL = [0x74];
export const I32_SHR_U = [0x76];
export const SELECT = [0x1b];
export const F32_ADD = [0x92];
export const F64_ADD = [0xa0];
export const F64_MUL = [0xa2];

/** `block` / `loop` with no result around `body`, and `br_if depth`. */
export const block = (...body: number[][]): number[] => [0x02, 0x40, ...body.flat(), 0x0b];
export const loop = (...body: number[][]): number[] => [0x03, 0x40, ...body.flat(), 0x0b];
export const brIf = (depth: number): number[] => [0x0d, ...uleb(depth)];

/** `local += by` for an i32 local. */
export const addTo = (local: number, by: number): number[] => [
  ...localGet(local),
  ...i32Const(by),
  ...I32_ADD,
  ...localSet(local),
];

/** `for (; counter < limit; counter += step) body` over i32 locals (unsigned compare). */
export const whileBelow = (counter: number, limit: number, step: number, body: number[]): number[] => [
  ...[0x02, 0x40, 0x03, 0x40], // block, loop
  ...localGet(counter),
  ...localGet(limit),
  ...I32_GE_U,
  ...brIf(1),
  ...body,
  ...addTo(counter, step),
  ...[0x0c, 0x00, 0x0b, 0x0b], // br loop; end loop; end block
];

/** `for (counter = 0; counter < limit; counter++) body` over i32 locals. */
export const countedLoop = (counter: number, limit: number, body: number[]): number[] => [
  ...i32Const(0),
  ...localSet(counter),
  ...whileBelow(counter, limit, 1, body),
];

/** A SIMD (0xfd-prefixed) instruction with its immediates. */
export const simd = (op: number, ...immediates: number[]): number[] => [0xfd, ...uleb(op), ...immediates];
/** v128.load / v128.store with memarg (log2 alignment, byte offset). */
export const v128Load = (align: number, offset: number): number[] => simd(0x00, align, ...uleb(offset));
export const v128Store = (align: number, offset: number): number[] => simd(0x0b, align, ...uleb(offset));
/** f32.store with 4-byte alignment at a byte offset from the address on the stack. */
export const f32Store = (offset: number): number[] => [0x38, 0x02, ...uleb(offset)];
/**
 * i8x16.swizzle, or relaxed SIMD's i8x16.relaxed_swizzle (no range fix-up for indices of 16 and up,
 * where the two may differ; see relaxedSimdAvailable).
 */
export const i8x16Swizzle = (relaxed: boolean): number[] => simd(relaxed ? 0x100 : 0x0e);
/** v128.const of sixteen zero bytes. */
export const V128_ZERO = simd(0x0c, ...new Array<number>(16).fill(0));
export const F32X4_ADD = simd(0xe4);
export const F32X4_MUL = simd(0xe6);
/** f32x4.relaxed_madd (relaxed SIMD): a, b, c on the stack give a·b + c, fused where the CPU has FMA. */
export const F32X4_RELAXED_MADD = simd(0x105);
export const F64X2_ADD = simd(0xf0);
export const F64X2_MUL = simd(0xf2);

export const I32 = 0x7f;
export const F64 = 0x7c;
export const V128 = 0x7b;

/** A function type from its parameter and result value types. */
export const funcType = (params: number[], results: number[]): number[] => [
  0x60,
  ...uleb(params.length),
  ...params,
  ...uleb(results.length),
  ...results,
];

/** One function's locals declaration: runs of [count, value type]. */
export const locals = (...runs: [number, number][]): number[] => [
  ...uleb(runs.length),
  ...runs.flatMap(([count, type]) => [...uleb(count), type]),
];

export interface WasmModuleParts {
  /** Encoded function types (funcType). */
  types: number[][];
  /** Per function, its type index, and its body (locals then code, ending with `end`). */
  functions: { type: number; body: number[] }[];
  /** Exported functions: name and function index. */
  exports: [string, number][];
  /**
   * Whether the imported memory is shared (the default): views of a shared memory cross threads,
   * but copies between it and ordinary arrays go element by element, several times slower than a
   * memcpy; a thread's private scratch memory is faster unshared.
   */
  sharedMemory?: boolean;
}

const section = (id: number, content: number[]): number[] => [id, ...uleb(content.length), ...content];
const vector = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()];
const name = (s: string): number[] => [...uleb(s.length), ...Array.from(s, (c) => c.charCodeAt(0))];

/**
 * A module whose functions work in an imported memory `env.memory` of 1 to 65536 pages, shared
 * unless `sharedMemory` is false, so views of it cross threads without copies.
 */
export function wasmModuleBytes(parts: WasmModuleParts): Uint8Array {
  const { types, functions, exports, sharedMemory = true } = parts;
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, vector(types)),
    ...section(2, [
      0x01,
      ...name("env"),
      ...name("memory"),
      0x02,
      sharedMemory ? 0x03 : 0x01,
      0x01,
      ...uleb(65536),
    ]),
    ...section(3, vector(functions.map((f) => uleb(f.type)))),
    ...section(7, vector(exports.map(([n, index]) => [...name(n), 0x00, ...uleb(index)]))),
    ...section(10, vector(functions.map((f) => [...uleb(f.body.length), ...f.body]))),
  ]);
}

let relaxedSimd: boolean | undefined;

/**
 * Whether relaxed SIMD (f32x4.relaxed_madd) validates in this runtime. Node 20's V8 has it behind
 * --experimental-wasm-relaxed-simd, which this turns on once, and only where a tiny relaxed module
 * does not validate already (newer runtimes need no flag); any failure means "not available".
 * The flag is process-wide, so modules compiled after this also instantiate in worker threads.
 */
export function relaxedSimdAvailable(): boolean {
  if (relaxedSimd !== undefined) return relaxedSimd;
  const probe = wasmModuleBytes({
    types: [funcType([], [V128])],
    functions: [
      { type: 0, body: [0, ...V128_ZERO, ...V128_ZERO, ...V128_ZERO, ...F32X4_RELAXED_MADD, 0x0b] },
    ],
    exports: [],
  });
  try {
    if (wasmApi === undefined) relaxedSimd = false;
    else if (wasmApi.validate(probe)) relaxedSimd = true;
    else {
      setFlagsFromString("--experimental-wasm-relaxed-simd");
      relaxedSimd = wasmApi.validate(probe);
    }
  } catch {
    relaxedSimd = false;
  }
  return relaxedSimd;
}
