import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { kernelBytes } from "./wasm-kernels.js";

const script = new URL("../../../scripts/build-kernels.mjs", import.meta.url).pathname;

describe("WebAssembly kernels built from their text", () => {
  it("are up to date with every .wat source (the build compiles the same bytes again)", () => {
    expect(() => execFileSync(process.execPath, [script, "--check"], { stdio: "pipe" })).not.toThrow();
  });

  it("build the unfused tile with a mul then an add where the fused one has relaxed_madd", () => {
    const text = readFileSync(new URL("./matmul/matmul-tile.wat", import.meta.url), "utf8");
    const madds = text.match(/\(f32x4\.relaxed_madd /g)?.length ?? 0;
    // Twelve in `tile` (row-major rows); in `quads` (row quads) eight in each of its four loops:
    // the k-blocked pairs, the first pair, the other pairs, and one row.
    expect(madds).toBe(44);
    const fused = kernelBytes("matmul/matmul-tile");
    const unfused = kernelBytes("matmul/matmul-tile.unfused");
    // relaxed_madd is 0xfd 0x85 0x02; f32x4.mul 0xfd 0xe6 0x01 and f32x4.add 0xfd 0xe4 0x01.
    const count = (bytes: Uint8Array, op: number[]) =>
      bytes.filter((_, i) => op.every((b, j) => bytes[i + j] === b)).length;
    expect(count(fused, [0xfd, 0x85, 0x02])).toBe(madds);
    expect(count(unfused, [0xfd, 0x85, 0x02])).toBe(0);
    expect(count(unfused, [0xfd, 0xe6, 0x01])).toBe(madds);
  });
});
