import { describe, expect, it } from "vitest";
import { toLanesInPlace } from "../../../formats/fp8-lanes.js";
import { toHalves } from "../../../formats/mxfp4-halves.js";
import { Rng } from "../../tensor/random.js";
import { wasmArena } from "../wasm-arena.js";
import { relayToLanes } from "./fp8-relayout.js";
import { relayToHalves } from "./mxfp4-relayout.js";

const rng = new Rng(28);

describe("relayInPlace's kernels", () => {
  it.each([
    ["relayToHalves (mxfp4-relayout.wat)", relayToHalves, toHalves],
    ["relayToLanes (fp8-relayout.wat)", relayToLanes, (codes: Uint8Array) => toLanesInPlace(codes.slice())],
  ])(
    "%s writes its reference's bytes in place, in the shared memory by the kernel and outside it",
    (_, relay, reference) => {
      const arena = wasmArena();
      if (arena === null) throw new Error("this runtime has no shared WebAssembly memory");
      for (const blocks of [1, 3, 64, 1001]) {
        const codes = Uint8Array.from({ length: 16 * blocks }, () => rng.nextU32() & 255);
        const want = reference(codes);
        const inArena = arena.array(Uint8Array, codes.length);
        if (inArena === null) throw new Error("the shared memory is full");
        inArena.set(codes);
        const outside = codes.slice();
        expect(relay(inArena)).toBe(inArena);
        expect(relay(outside)).toBe(outside);
        expect(Buffer.from(inArena).equals(Buffer.from(want))).toBe(true);
        expect(Buffer.from(outside).equals(Buffer.from(want))).toBe(true);
      }
    },
  );
});
