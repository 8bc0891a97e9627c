import { instantiateWasm } from "../../../common/wasm-runtime.js";
import { toHalvesInto } from "../../../formats/mxfp4-halves.js";
import { type WasmArena, wasmArena } from "../wasm-arena.js";
import { compileKernel } from "../wasm-kernels.js";

/** mxfp4-relayout.wat's to_halves: `count` blocks of 16 code bytes at byte `at`, in place. */
type ToHalves = (at: number, count: number) => void;

/** The kernel over each arena's memory, instantiated once (null: this runtime lacks SIMD). */
const kernels = new WeakMap<WasmArena, ToHalves | null>();

function kernelFor(arena: WasmArena): ToHalves | null {
  let kernel = kernels.get(arena);
  if (kernel === undefined) {
    const module = compileKernel("matmul/mxfp4-relayout");
    kernel =
      module === undefined
        ? null
        : (instantiateWasm(module, arena.memory) as { to_halves: ToHalves }).to_halves;
    kernels.set(arena, kernel);
  }
  return kernel;
}

/**
 * MXFP4 codes (whole blocks of 16) in OCP order re-laid out in halves order (formats/mxfp4-halves.ts)
 * in place: by mxfp4-relayout.wat where they lie in the kernels' shared memory, as a load places
 * them, else by toHalvesInto, its plain reference (the same bytes, slower by far).
 */
export function relayToHalves(codes: Uint8Array): Uint8Array {
  const arena = wasmArena();
  const at = arena?.offsetOf(codes) ?? -1;
  const kernel = arena !== null && at >= 0 ? kernelFor(arena) : null;
  if (kernel !== null) kernel(at, codes.length / 16);
  else toHalvesInto(codes, codes);
  return codes;
}
