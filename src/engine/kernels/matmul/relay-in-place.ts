import { instantiateWasm } from "../../../common/wasm-runtime.js";
import { type WasmArena, wasmArena } from "../wasm-arena.js";
import { compileKernel, type KernelBinary } from "../wasm-kernels.js";

/** A re-layout kernel's export: `count` blocks of 16 code bytes at byte `at`, in place. */
type RelayBlocks = (at: number, count: number) => void;

/** Each re-layout kernel over each arena's memory, instantiated once (null: this runtime lacks SIMD). */
const kernels = new WeakMap<WasmArena, Map<KernelBinary, RelayBlocks | null>>();

function kernelFor(arena: WasmArena, binary: KernelBinary, name: string): RelayBlocks | null {
  const byBinary = kernels.get(arena) ?? new Map<KernelBinary, RelayBlocks | null>();
  kernels.set(arena, byBinary);
  let kernel = byBinary.get(binary);
  if (kernel === undefined) {
    const module = compileKernel(binary);
    kernel =
      module === undefined
        ? null
        : (instantiateWasm(module, arena.memory) as Record<string, RelayBlocks>)[name];
    byBinary.set(binary, kernel ?? null);
  }
  return kernel ?? null;
}

/**
 * Narrow codes (whole blocks of 16 bytes) re-laid out in place as a load places them: by export
 * `name` of kernel `binary` where they lie in the kernels' shared memory, else by `reference`, its
 * plain reference (the same bytes, slower by far).
 */
export function relayInPlace(
  codes: Uint8Array,
  binary: KernelBinary,
  name: string,
  reference: (codes: Uint8Array) => void,
): Uint8Array {
  const arena = wasmArena();
  const at = arena?.offsetOf(codes) ?? -1;
  const kernel = arena !== null && at >= 0 ? kernelFor(arena, binary, name) : null;
  if (kernel !== null) kernel(at, codes.length / 16);
  else reference(codes);
  return codes;
}
