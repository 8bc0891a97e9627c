import { describe, expect, it } from "vitest";
import { builtWasmBytes, compileBuiltWasm, compileSwizzleKernel } from "./built-wasm.js";
import { BringupError } from "./errors.js";

const decode = new URL("../formats/wasm/decode.wasm", import.meta.url);

describe("WebAssembly binaries built next to their module", () => {
  it("says to run the build, with the caller's code, when a binary is missing", () => {
    const missing = new URL("./wasm/not-built.wasm", import.meta.url);
    const error = (() => {
      try {
        builtWasmBytes(missing, "ENGINE_KERNELS_NOT_BUILT");
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(BringupError);
    expect((error as BringupError).code).toBe("ENGINE_KERNELS_NOT_BUILT");
    expect((error as BringupError).message).toContain("npm run build");
    expect((error as BringupError).subject).toBe(missing.pathname);
  });

  it("compiles a built binary, turning relaxed SIMD on where Node 20 keeps it behind a flag", () => {
    expect(Array.from(builtWasmBytes(decode, "FORMATS_KERNELS_NOT_BUILT").subarray(0, 4))).toEqual([
      0, 0x61, 0x73, 0x6d,
    ]);
    expect(compileBuiltWasm(decode, "FORMATS_KERNELS_NOT_BUILT")).toBeDefined();
  });

  it("gives a swizzle kernel's relaxed build when asked for it, else its plain-swizzle build", () => {
    const relaxed = compileSwizzleKernel(decode, "FORMATS_KERNELS_NOT_BUILT", true);
    const plain = compileSwizzleKernel(decode, "FORMATS_KERNELS_NOT_BUILT", false);
    expect(relaxed?.relaxed).toBe(true);
    expect(plain?.relaxed).toBe(false);
    expect(plain?.module).not.toBe(relaxed?.module);
    expect(compileSwizzleKernel(decode, "FORMATS_KERNELS_NOT_BUILT", true)?.module).toBe(relaxed?.module); // compiled once
  });
});
