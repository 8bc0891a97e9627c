/**
 * The WebAssembly runtime as the kernels use it: this project's TypeScript lib has no wasm typings,
 * so the few types used are declared here, with compiling and instantiating over one memory.
 */

/** The few WebAssembly types used here (this project's TypeScript lib has no wasm typings). */
export interface WasmMemory {
  readonly buffer: ArrayBufferLike;
}

/** A compiled module: opaque, and structured-cloneable to worker threads. */
export type WasmModule = object & { readonly __wasmModule?: never };

/** A shared memory: its buffer never moves when it grows. */
export interface WasmSharedMemory {
  readonly buffer: SharedArrayBuffer;
  grow(pages: number): number;
}

/** An unshared memory: growing it replaces its buffer, and views of the old one go stale. */
export interface WasmUnsharedMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

export interface WasmApi {
  Memory: {
    new (d: { initial: number; maximum: number; shared: true }): WasmSharedMemory;
    new (d: { initial: number; maximum: number }): WasmUnsharedMemory;
  };
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: object) => { exports: unknown };
}

/** This runtime's WebAssembly, or undefined where it has none. */
export const wasmApi = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;

/** The compiled module, or undefined where WebAssembly or a feature the bytes use (SIMD) is unavailable. */
export function compileWasm(bytes: Uint8Array): WasmModule | undefined {
  if (wasmApi === undefined || !wasmApi.validate(bytes)) return undefined;
  return new wasmApi.Module(bytes);
}

/** The exports of an instance of `module` over `memory` as `env.memory`. */
export function instantiateWasm(module: WasmModule, memory: object): unknown {
  return new (wasmApi as WasmApi).Instance(module, { env: { memory } }).exports;
}
