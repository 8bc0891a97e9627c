import { describe, expect, it } from "vitest";
import {
  compileWasm,
  funcType,
  I32,
  i32Const,
  instantiateWasm,
  localGet,
  locals,
  sleb,
  uleb,
  V128,
  type WasmApi,
  wasmApi,
  wasmModuleBytes,
} from "./wasm-assembler.js";

describe("uleb", () => {
  it("encodes edge values as hand-computed bytes", () => {
    expect(uleb(0)).toEqual([0x00]);
    expect(uleb(1)).toEqual([0x01]);
    expect(uleb(127)).toEqual([0x7f]);
    expect(uleb(128)).toEqual([0x80, 0x01]);
    expect(uleb(300)).toEqual([0xac, 0x02]);
    expect(uleb(16383)).toEqual([0xff, 0x7f]);
    expect(uleb(16384)).toEqual([0x80, 0x80, 0x01]);
    expect(uleb(65536)).toEqual([0x80, 0x80, 0x04]);
    expect(uleb(624485)).toEqual([0xe5, 0x8e, 0x26]);
    expect(uleb(0xffffffff)).toEqual([0xff, 0xff, 0xff, 0xff, 0x0f]);
  });
});

describe("sleb", () => {
  it("encodes edge values as hand-computed bytes", () => {
    expect(sleb(0)).toEqual([0x00]);
    expect(sleb(1)).toEqual([0x01]);
    expect(sleb(63)).toEqual([0x3f]);
    expect(sleb(64)).toEqual([0xc0, 0x00]);
    expect(sleb(-1)).toEqual([0x7f]);
    expect(sleb(-64)).toEqual([0x40]);
    expect(sleb(-65)).toEqual([0xbf, 0x7f]);
    expect(sleb(127)).toEqual([0xff, 0x00]);
    expect(sleb(-128)).toEqual([0x80, 0x7f]);
    expect(sleb(-123456)).toEqual([0xc0, 0xbb, 0x78]);
    expect(sleb(2147483647)).toEqual([0xff, 0xff, 0xff, 0xff, 0x07]);
    expect(sleb(-2147483648)).toEqual([0x80, 0x80, 0x80, 0x80, 0x78]);
  });
});

describe("instructions and framing", () => {
  it("writes constants signed and locals as runs", () => {
    expect(i32Const(-1000000)).toEqual([0x41, 0xc0, 0xfb, 0x42]);
    expect(localGet(200)).toEqual([0x20, 0xc8, 0x01]);
    expect(locals([12, I32], [10, V128])).toEqual([0x02, 0x0c, 0x7f, 0x0a, 0x7b]);
    expect(funcType([I32, I32], [I32])).toEqual([0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f]);
  });

  it("frames a module WebAssembly accepts", () => {
    // add(a, b) = a + b, over the imported shared memory it does not touch.
    const body = [...locals(), ...localGet(0), ...localGet(1), 0x6a, 0x0b];
    const bytes = wasmModuleBytes({
      types: [funcType([I32, I32], [I32])],
      functions: [{ type: 0, body }],
      exports: [["add", 0]],
    });
    expect(Array.from(bytes.subarray(0, 8))).toEqual([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
    const module = compileWasm(bytes);
    expect(module).toBeDefined();
    const memory = new (wasmApi as WasmApi).Memory({ initial: 1, maximum: 65536, shared: true });
    const { add } = instantiateWasm(module as object, memory) as { add: (a: number, b: number) => number };
    expect(add(40, 2)).toBe(42);
  });
});
