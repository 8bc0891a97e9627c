import { afterAll, describe, expect, it } from "vitest";
import { instantiateWasm, type WasmModule } from "../../../common/wasm-runtime.js";
import { toHalves } from "../../../formats/index.js";
import { Rng } from "../../tensor/random.js";
import { shareArray, type Weight } from "../../tensor/weight.js";
import { MatmulPool } from "../pool.js";
import { weightAt } from "../reference.js";
import type { KernelSwitches } from "../switches.js";
import { wasmArena } from "../wasm-arena.js";
import { compileKernel } from "../wasm-kernels.js";
import { type Mxfp4Rows, mxfp4Tables } from "./matmul-kernel.js";

// MXFP4 weights whose codes are in halves order (a checkpoint re-laid out by `bringup weights
// convert --layout halves`) against the same weight in OCP order: every path gives the same bits.
const rng = new Rng(29);
const pools: MatmulPool[] = [];
afterAll(() => Promise.all(pools.map((p) => p.close())));

const bitsOf = (a: Float32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

function pool(threads: number, switches: Partial<KernelSwitches>): MatmulPool {
  const p = new MatmulPool(threads, { simd: true, ...switches });
  pools.push(p);
  return p;
}

describe("MXFP4 codes in halves order", () => {
  // More than one chunk of rows; every byte value in rows of ordinary and extreme scales (255: NaN).
  const [N, K] = [70, 64];
  const codes = Uint8Array.from({ length: (N * K) / 2 }, (_, i) => (i * 37 + (i >> 8)) & 255);
  const extremes = [0, 1, 2, 126, 127, 128, 253, 254, 255];
  const scales = Uint8Array.from({ length: (N * K) / 32 }, (_, i) =>
    i < 2 * extremes.length ? (extremes[i >> 1] as number) : 110 + ((i * 7) % 30),
  );
  const ocp: Weight = {
    dtype: "mxfp4",
    rows: N,
    cols: K,
    data: shareArray(codes),
    mxScales: shareArray(scales),
  };
  const halves: Weight = { ...ocp, data: shareArray(toHalves(codes)), mxfp4Order: "halves" };

  it("decode to the OCP weight's values in the plain reference, value by value", () => {
    for (let n = 0; n < N; n++)
      for (let k = 0; k < K; k++) expect(Object.is(weightAt(halves, n, k), weightAt(ocp, n, k))).toBe(true);
  });

  it("give the OCP weight's bits on every path, the fused decode relaxed or not, at any batch and split", () => {
    const paths = [
      pool(1, { mxfp4: "fused" }),
      pool(2, { mxfp4: "fused" }),
      pool(2, { mxfp4: "fused", mxfp4ScratchTokens: Number.POSITIVE_INFINITY }),
      pool(1, { mxfp4: "fused", fma: false }),
      pool(2, { mxfp4: "unpacked" }),
    ];
    // int8 quantizes inputs in OCP's even/odd pairs: halves codes take the exact decode there.
    const int8 = pool(1, { mxfp4: "int8" });
    for (const M of [1, 2, 3, 13]) {
      const x = rng.fillNormal(new Float32Array(M * K), 1);
      const run = (p: MatmulPool, w: Weight) => {
        const out = new Float32Array(M * N);
        p.matmul(x, M, w, out);
        return bitsOf(out);
      };
      for (const p of paths) expect(run(p, halves)).toEqual(run(p, ocp));
      expect(run(int8, halves)).toEqual(run(paths[0] as MatmulPool, ocp));
    }
  });

  it("decode by the .halves builds, relaxed and plain, to the bits the OCP decode gives every byte at every exponent", () => {
    const arena = wasmArena();
    const builds = (
      [
        "matmul/mxfp4-decode",
        "matmul/mxfp4-decode.halves",
        "matmul/mxfp4-decode.halves.plain-swizzle",
      ] as const
    ).map((name) => compileKernel(name));
    if (arena === null || builds.some((b) => b === undefined)) throw new Error("SIMD unavailable");
    // 256 blocks of 16 bytes, block e at exponent e, every byte value 16 times.
    const ocpCodes = Uint8Array.from({ length: 4096 }, (_, i) => (i * 17 + (i >> 4)) & 255);
    const place = (bytes: Uint8Array) => {
      const at = arena.allocate(bytes.length);
      new Uint8Array(arena.memory.buffer, at, bytes.length).set(bytes);
      return at;
    };
    const tables = place(mxfp4Tables());
    const exponents = place(Uint8Array.from({ length: 256 }, (_, e) => e));
    const [ocpAt, halvesAt] = [place(ocpCodes), place(toHalves(ocpCodes))];
    const outs = builds.map((module, i) => {
      const out = arena.allocate(256 * 128);
      const { decode } = instantiateWasm(module as WasmModule, arena.memory) as {
        decode: Mxfp4Rows["decode"];
      };
      decode(i === 0 ? ocpAt : halvesAt, exponents, tables, out, 256);
      return bitsOf(new Float32Array(arena.memory.buffer, out, 256 * 32));
    });
    expect(outs[1]).toEqual(outs[0]);
    expect(outs[2]).toEqual(outs[0]);
  });
});
