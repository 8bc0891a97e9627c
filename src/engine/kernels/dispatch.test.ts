import { afterAll, describe, expect, it } from "vitest";
import { MatmulPool } from "./pool.js";
import { swiglu } from "./swiglu/swiglu.js";
import { wasmArena } from "./wasm-arena.js";

const pool = new MatmulPool(2, { simd: true });
afterAll(() => pool.close());

describe("dispatch", () => {
  it("holds the helpers until the caller has written the inputs it writes after waking them", () => {
    const arena = wasmArena();
    const memory = pool.planMemory(1 << 20);
    const n = 4096;
    const [gate, up] = [memory.float32(n), memory.float32(n)];
    if (arena === null || gate === undefined || up === undefined)
      throw new Error("no shared WebAssembly memory here");
    const expectedGate = Float32Array.from({ length: n }, (_, i) => Math.sin(i) * 4);
    const expectedUp = Float32Array.from({ length: n }, (_, i) => Math.cos(i));
    const expected = expectedGate.slice();
    swiglu(expected, expectedUp, n);
    const vectors = n / 4;
    const units = 64;
    // The inputs are written long after the helper woke: a helper that did not wait for them
    // would run its units over the zeros the arrays hold before. Several times, as the helper's
    // thread may still be starting during the first.
    for (let attempt = 0; attempt < 6; attempt++) {
      gate.fill(0);
      up.fill(0);
      pool.run("swiglu", { g: arena.offsetOf(gate), u: arena.offsetOf(up), vectors, units }, units, () => {
        const until = performance.now() + 40;
        while (performance.now() < until);
        gate.set(expectedGate);
        up.set(expectedUp);
      });
      expect(Array.from(gate)).toEqual(Array.from(expected));
    }
  });

  it("opens the job to the helpers even when writing the inputs throws, so the next dispatch runs", () => {
    const arena = wasmArena();
    const memory = pool.planMemory(1 << 16);
    const [gate, up] = [memory.float32(256), memory.float32(256)];
    if (arena === null || gate === undefined || up === undefined)
      throw new Error("no shared WebAssembly memory here");
    const job = { g: arena.offsetOf(gate), u: arena.offsetOf(up), vectors: 64, units: 8 };
    expect(() =>
      pool.run("swiglu", job, 8, () => {
        throw new Error("input failed");
      }),
    ).toThrow("input failed");
    up.fill(1);
    gate.fill(2);
    pool.run("swiglu", job, 8, () => {});
    expect(gate[255]).toBe(Math.fround(2 / (1 + Math.exp(-2))));
  });
});
