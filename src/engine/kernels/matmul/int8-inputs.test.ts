import { describe, expect, it } from "vitest";
import { instantiateWasm } from "../../../common/wasm-runtime.js";
import { Rng } from "../../tensor/random.js";
import { wasmArena } from "../wasm-arena.js";
import { compileKernel } from "../wasm-kernels.js";
import { Int8Inputs } from "./int8-inputs.js";
import { type Int8Quantize, quantizedBytes, quantizeInput } from "./mxfp4-int8.js";

describe("Int8Inputs (the pool's region of quantized inputs)", () => {
  const arena = wasmArena();
  const module = compileKernel("matmul/mxfp4-int8");
  if (arena === null || module === undefined) throw new Error("SIMD unavailable");
  const { quantize } = instantiateWasm(module, arena.memory) as { quantize: Int8Quantize };
  const rng = new Rng(3);

  it("writes quantizeInput's bytes, in one region while inputs fit and a larger one after", () => {
    const inputs = new Int8Inputs(arena, quantize);
    const write = (M: number, K: number) => {
      const x = arena.array(Float32Array, M * K) as Float32Array;
      rng.fillNormal(x, 1);
      const at = inputs.write(arena.offsetOf(x), M, K);
      const want = new Uint8Array(quantizedBytes(M, K));
      quantizeInput(x, M, K, want.buffer, 0);
      expect(
        Buffer.from(new Uint8Array(arena.memory.buffer, at, want.length)).equals(Buffer.from(want)),
      ).toBe(true);
      return at;
    };
    const first = write(2, 256);
    expect(write(1, 128)).toBe(first);
    expect(write(4, 1024)).not.toBe(first);
  });

  it("refuses an input the 4 GiB memory cannot hold, naming it and what to do", () => {
    const inputs = new Int8Inputs(arena, quantize);
    expect(() => inputs.write(0, 1 << 20, 4096)).toThrow(
      /no room left .* for a 1048576x4096 input quantized to int8; lower --max-num-batched-tokens/,
    );
  });
});
