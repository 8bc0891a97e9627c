import { describe, expect, it } from "vitest";
import { wasmApi } from "../../../common/wasm-runtime.js";
import { Rng } from "../../tensor/random.js";
import { toRowQuads } from "../../tensor/row-quads.js";
import { compileSimdTile, instantiateTile, QUADS_ACC_BYTES } from "./tile-module.js";

const PAGE = 65536;
const K = 256;
const N = 32;

/** Two pages of shared memory and, from `seed`, N x K weights in row quads and `inputs` input rows. */
function quadsCase(seed: number, inputs: number) {
  if (wasmApi === undefined) throw new Error("this runtime has no WebAssembly");
  const memory = new wasmApi.Memory({ initial: 2, maximum: 2, shared: true });
  const rng = new Rng(seed);
  const rowMajor = rng.fillNormal(new Float32Array(N * K), 0.5);
  const weights = rowMajor.slice();
  toRowQuads(weights, N, K);
  const x = rng.fillNormal(new Float32Array(inputs * K), 1);
  return { memory, rowMajor, weights, x, heap: new Float32Array(memory.buffer) };
}

describe("the quads tile's page touches ahead of the weights", () => {
  it("stop at the memory's end: weights in its last bytes give the bits they give elsewhere", () => {
    // K = 256: a group of four rows is one 4 KiB page, and each group touches the page six groups
    // on. Eight groups end at the memory's end, so groups 0 and 1 touch pages inside it and the
    // rest pages past it, which must be skipped, not read (a read past the end traps).
    const { memory, weights, x, heap } = quadsCase(5, 2);
    // Byte offsets: the input, it in pairs, the outputs, the weights low in the memory and at its end.
    const [xAt, pairsAt, outAt, wLow, wEnd] = [0, 2 * K * 4, 4 * K * 4, 8192, 2 * PAGE - N * K * 4];
    heap.set(x, xAt / 4);
    heap.set(weights, wLow / 4);
    heap.set(weights, wEnd / 4);
    for (const fused of [true, false]) {
      const tile = instantiateTile(compileSimdTile(fused) as object, memory);
      tile.pairs(K, 2, xAt, pairsAt);
      for (const M of [1, 2]) {
        const [xIn, ldo] = [M === 1 ? xAt : pairsAt, N * 4];
        tile.quads(K, M, xIn, wLow, outAt, N / 4, ldo, -1, -1);
        const low = Array.from(heap.subarray(outAt / 4, outAt / 4 + M * N));
        heap.fill(0, outAt / 4, outAt / 4 + M * N);
        tile.quads(K, M, xIn, wEnd, outAt, N / 4, ldo, -1, -1);
        expect(Array.from(heap.subarray(outAt / 4, outAt / 4 + M * N))).toEqual(low);
      }
    }
  });

  it("reads ahead wherever it is pointed, up to the memory's last byte, and changes no bits", () => {
    // M = 10: four later pairs after the first, so the read ahead runs (from M = 8); M = 4 runs
    // none; M = 16: eight k-blocked pairs and none later; M = 24: four later pairs after them.
    // K = 256, 32 rows: the reads cover 16 KiB from `ahead`, or up to the memory's end.
    const { memory, weights, x, heap } = quadsCase(7, 24);
    const [xAt, pairsAt, outAt, accAt, wAt] = [0, 24 * K * 4, 48 * K * 4, 52 * K * 4, 64 * K * 4];
    heap.set(x, xAt / 4);
    heap.set(weights, wAt / 4);
    const end = 2 * PAGE;
    for (const fused of [true, false]) {
      const tile = instantiateTile(compileSimdTile(fused) as object, memory);
      tile.pairs(K, 24, xAt, pairsAt);
      for (const M of [4, 10, 16, 24]) {
        const outputs = (ahead: number) => {
          heap.fill(0, outAt / 4, outAt / 4 + M * N);
          tile.quads(K, M, pairsAt, wAt, outAt, N / 4, N * 4, ahead, accAt);
          return Array.from(heap.subarray(outAt / 4, outAt / 4 + M * N));
        };
        const none = outputs(-1);
        expect(none.some((v) => v !== 0)).toBe(true);
        // The next weights, the input, 4 KiB before the end, the last byte, past the end.
        for (const ahead of [wAt + N * K * 4, xAt, end - 4096, end - 1, end, 0x7fffffff]) {
          expect(outputs(ahead)).toEqual(none);
        }
      }
    }
  });
});

describe("the quads tile's k-blocked pairs (from twelve inputs)", () => {
  it("give the row-major tile's bits, whatever lay in their scratch, and write nothing past it", () => {
    // K = 100 and 256: 25 and 64 k steps, a last block of one step and whole blocks of eight.
    // M = 12, 13: six pairs, the one left; 16, 17: eight; 25: eight pairs then four and one more.
    const { memory, rowMajor, x, heap } = quadsCase(11, 25);
    // Byte offsets: the input, it in pairs, the outputs, the scratch, the weights row-major and
    // in row quads.
    const KIB = 1024;
    const [xAt, pairsAt, outAt, accAt] = [0, 25 * KIB, 50 * KIB, 54 * KIB];
    const [wAt, quadsAt] = [58 * KIB, 90 * KIB];
    const sentinel = accAt + QUADS_ACC_BYTES;
    for (const k of [100, 256]) {
      heap.set(rowMajor.subarray(0, N * k), wAt / 4);
      const quads = rowMajor.slice(0, N * k);
      toRowQuads(quads, N, k);
      heap.set(quads, quadsAt / 4);
      heap.set(x.subarray(0, 25 * k), xAt / 4);
      for (const fused of [true, false]) {
        const tile = instantiateTile(compileSimdTile(fused) as object, memory);
        for (const M of [12, 13, 16, 17, 25]) {
          tile.pairs(k, M, xAt, pairsAt);
          tile.tile(k, M, xAt, wAt, outAt, N / 4, N * 4);
          const expected = Array.from(heap.subarray(outAt / 4, outAt / 4 + M * N));
          heap.fill(0, outAt / 4, outAt / 4 + M * N);
          heap.fill(Number.NaN, accAt / 4, sentinel / 4);
          heap[sentinel / 4] = 1234.5;
          tile.quads(k, M, pairsAt, quadsAt, outAt, N / 4, N * 4, -1, accAt);
          expect(Array.from(heap.subarray(outAt / 4, outAt / 4 + M * N))).toEqual(expected);
          expect(heap[sentinel / 4]).toBe(1234.5);
        }
      }
    }
  });
});
