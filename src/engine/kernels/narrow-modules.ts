import type { WasmModule } from "../../common/wasm-runtime.js";
import type { KernelModules } from "./kernel-thread.js";
import type { Fp8Builds } from "./matmul/fp8-rows.js";
import { MXFP4_TABLE_BYTES, mxfp4Tables } from "./matmul/matmul-kernel.js";
import type { KernelSwitches } from "./switches.js";
import type { WasmArena } from "./wasm-arena.js";
import { compileKernel } from "./wasm-kernels.js";

/*
 * The narrow-weight kernels a MatmulPool compiles for its threads (pool.ts): which builds of the
 * MXFP4 and FP8 kernels the switches ask for, and the MXFP4 tables they read.
 */

/** The MXFP4 kernels' tables (mxfp4Tables: half E8M0 scales first) in the arena, or -1. */
function mxfp4TableAt(arena: WasmArena): number {
  const at = arena.allocate(MXFP4_TABLE_BYTES);
  if (at >= 0) new Uint8Array(arena.memory.buffer, at, MXFP4_TABLE_BYTES).set(mxfp4Tables());
  return at;
}

/** matmul/mxfp4-int8.wat compiled: its relaxed build, or where relaxed SIMD is unavailable its plain-dot one. */
export function compileMxfp4Int8(): WasmModule | undefined {
  return compileKernel("matmul/mxfp4-int8") ?? compileKernel("matmul/mxfp4-int8.plain-dot");
}

/** The MXFP4 kernels the switch asks for: the fused rows (built like the tile), or the integer path. */
export function mxfp4Modules(
  arena: WasmArena,
  fma: boolean,
  switches: KernelSwitches,
): Pick<KernelModules, "mxfp4" | "mxfp4Int8"> {
  if (switches.mxfp4 === "unpacked") return {};
  if (switches.mxfp4 === "int8") {
    const module = compileMxfp4Int8();
    return module === undefined ? {} : { mxfp4Int8: { module } };
  }
  const halfScales = mxfp4TableAt(arena);
  if (halfScales < 0) return {};
  const module = compileKernel(fma ? "matmul/mxfp4-rows" : "matmul/mxfp4-rows.unfused");
  const halves = compileKernel(fma ? "matmul/mxfp4-rows.halves" : "matmul/mxfp4-rows.halves.unfused");
  const decode = compileKernel("matmul/mxfp4-decode") ?? compileKernel("matmul/mxfp4-decode.plain-swizzle");
  const decodeHalves =
    compileKernel("matmul/mxfp4-decode.halves") ?? compileKernel("matmul/mxfp4-decode.halves.plain-swizzle");
  return module === undefined || halves === undefined || decode === undefined || decodeHalves === undefined
    ? {}
    : {
        mxfp4: {
          module,
          halves,
          decode,
          decodeHalves,
          halfScales,
          scratchTokens: switches.mxfp4ScratchTokens,
        },
      };
}

/**
 * The FP8 kernels for codes in file order and their `.lanes` and `.quads` builds (each built like
 * the tile, and its `.nan-free` build; with fp8=scaled each also its `.scaled` pair), unless the
 * switch unpacks narrow weights.
 */
export function fp8Module(fma: boolean, switches: KernelSwitches): Pick<KernelModules, "fp8"> {
  if (switches.mxfp4 === "unpacked") return {};
  const builds = (order: "" | ".lanes" | ".quads") => fp8Builds(order, fma ? "" : ".unfused", switches.fp8);
  const [file, lanes, quads] = [builds(""), builds(".lanes"), builds(".quads")];
  return file === undefined || lanes === undefined || quads === undefined
    ? {}
    : { fp8: { file, lanes, quads, scratchTokens: switches.mxfp4ScratchTokens } };
}

function fp8Builds(
  order: "" | ".lanes" | ".quads",
  unfused: "" | ".unfused",
  fp8: KernelSwitches["fp8"],
): Fp8Builds | undefined {
  const pair = (scaled: "" | ".scaled") => {
    const module = compileKernel(`matmul/fp8-rows${scaled}${order}${unfused}`);
    const nanFree = compileKernel(`matmul/fp8-rows${scaled}.nan-free${order}${unfused}`);
    return module === undefined || nanFree === undefined ? undefined : { module, nanFree };
  };
  const exact = pair("");
  const scaled = fp8 === "scaled" ? pair(".scaled") : undefined;
  if (exact === undefined || (fp8 === "scaled" && scaled === undefined)) return undefined;
  return scaled === undefined ? exact : { ...exact, scaled };
}
