import { setFlagsFromString } from "node:v8";
import wabtInit from "wabt";
import { compileWasm, instantiateWasm } from "../src/common/wasm-runtime.js";
import { int8ExponentBytes, layInt8Exponents } from "../src/engine/kernels/matmul/int8-exponents.js";
import { MXFP4_TABLE_BYTES, mxfp4Tables } from "../src/engine/kernels/matmul/matmul-kernel.js";
import { Rng } from "../src/engine/tensor/random.js";

/**
 * The shared memory bench/kernel-before-after.ts runs both arms' kernels in, and what it puts there:
 * kernels instantiated from text, bump allocation, random MXFP4 weights (with the integer path's
 * exponents laid out by block) from a fixed seed.
 */

setFlagsFromString("--experimental-wasm-relaxed-simd");
const wabt = await wabtInit();
export const memory = new WebAssembly.Memory({ initial: 2048, maximum: 65536, shared: true });
/** A kernel module's exports. */
export type Arm = Record<string, (...a: number[]) => number>;

/** `text` (WebAssembly text named `name`) instantiated on the shared memory. */
export function instantiate(text: string, name: string): Arm {
  const features = { simd: true, threads: true, relaxed_simd: true };
  const parsed = wabt.parseWat(name, text, features);
  const { buffer } = parsed.toBinary({});
  parsed.destroy();
  const module = compileWasm(buffer);
  if (module === undefined) throw new Error("this runtime has no relaxed WebAssembly SIMD");
  return instantiateWasm(module, memory) as Arm;
}

/** Bump allocation in the shared memory, 64-byte aligned, growing it as needed. */
let top = 0;
export function allocate(bytes: number): number {
  const at = top;
  top = Math.ceil((top + bytes) / 64) * 64;
  const missing = top - memory.buffer.byteLength;
  if (missing > 0) memory.grow(Math.ceil(missing / 65536));
  return at;
}
export const rng = new Rng(5);

/** The [N, K] weight's exponents at `scales` (row-major) laid out by block in the memory: their offset. */
export function int8Exponents(scales: number, N: number, K: number): number {
  const at = allocate(int8ExponentBytes(N, K));
  layInt8Exponents(new Uint8Array(memory.buffer, scales, (N * K) / 32), N, K, memory.buffer, at);
  return at;
}

/** MXFP4 weights [N, K] of random codes and exponents 118-125 (scales 2^-9 to 2^-2), and the MXFP4 tables. */
export function mxfp4Weights(N: number, K: number): { tables: number; codes: number; scales: number } {
  const tables = allocate(MXFP4_TABLE_BYTES);
  new Uint8Array(memory.buffer, tables, MXFP4_TABLE_BYTES).set(mxfp4Tables());
  const codes = allocate((N * K) / 2);
  const scales = allocate((N * K) / 32);
  new Uint8Array(memory.buffer, codes, (N * K) / 2).set(
    Uint8Array.from({ length: (N * K) / 2 }, () => rng.nextU32() & 255),
  );
  new Uint8Array(memory.buffer, scales, (N * K) / 32).set(
    Uint8Array.from({ length: (N * K) / 32 }, () => 118 + (rng.nextU32() % 8)),
  );
  return { tables, codes, scales };
}

/**
 * The MoE bench's experts: 64 MXFP4 [2048, 1024] (64 MiB of codes, past L3), 16 picked at random
 * (a fixed sequence) as decode steps pick them, each read cold-ish rather than as one stream; `each`
 * calls `call(codes, scales, out)` for every chunk of rows of each pick, as a matmul does.
 */
export function randomExperts() {
  const [E, rows] = [64, 2048];
  const stack = mxfp4Weights(E * rows, 1024);
  const picks = Array.from({ length: 16 }, () => rng.nextU32() % E);
  const o = allocate(picks.length * rows * 4);
  // Each expert's exponents laid out by block for the integer path, as the engine lays a weight's.
  const exps = Array.from({ length: E }, (_, e) => int8Exponents(stack.scales + e * rows * 32, rows, 1024));
  /**
   * Each picked expert's rows, `chunk` at a time (fewer at its end): their codes, scales, output,
   * count, and their exponents by block (the integer path's).
   */
  const each = (
    chunk: number,
    call: (codes: number, scales: number, out: number, n: number, exps: number) => void,
  ) =>
    picks.forEach((e, i) => {
      for (let c0 = 0; c0 < rows; c0 += chunk)
        call(
          stack.codes + (e * rows + c0) * 512,
          stack.scales + (e * rows + c0) * 32,
          o + (i * rows + c0) * 4,
          Math.min(chunk, rows - c0),
          (exps[e] as number) + c0,
        );
    });
  const label = `16 of 64 experts [${rows}, 1024] at random`;
  return {
    tables: stack.tables,
    codes: stack.codes,
    scales: stack.scales,
    codesBytes: E * rows * 512,
    ldo: rows * 4,
    rows,
    o,
    work: picks.length * rows * 1024,
    outBytes: picks.length * rows * 4,
    each,
    label,
  };
}
