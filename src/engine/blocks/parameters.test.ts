import { describe, expect, it } from "vitest";
import type { HostTensor } from "../loader/host-tensor.js";
import { WeightSource } from "../loader/weight-source.js";
import { putParameters } from "../tiny/weights.js";
import { bindParameters, declared, f32Param, idsParam, matrixParam, stackedParam } from "./parameters.js";

const declarations = (withBias: boolean) => ({
  proj: matrixParam("blk.proj", 4, 32),
  bias: withBias ? f32Param("blk.proj.bias", [4], { std: 0.1 }) : undefined,
  norm: f32Param("blk.norm.weight", [32], "ones"),
  experts: stackedParam("blk.experts", 2, 3, 32),
});

function source(tensors: Map<string, HostTensor>): WeightSource {
  return new WeightSource((n) => tensors.get(n), [...tensors.keys()], "ckpt");
}

describe("declared parameters", () => {
  it("are written by a tiny model and read back by binding, each role as its dtype says", () => {
    const tensors = new Map<string, HostTensor>();
    putParameters(tensors, 7, declarations(true));
    const w = source(tensors);
    const bound = bindParameters(w, declarations(true));
    expect([bound.proj.rows, bound.proj.cols]).toEqual([4, 32]);
    expect(bound.bias).toHaveLength(4);
    expect([...bound.norm]).toEqual(new Array(32).fill(1));
    expect(bound.experts.map((e) => [e.rows, e.cols])).toEqual([
      [3, 32],
      [3, 32],
    ]);
    expect(w.unused()).toEqual([]);
  });

  it("leave out the roles the config leaves out, and the checkpoint's extra tensor stays unused", () => {
    const tensors = new Map<string, HostTensor>();
    putParameters(tensors, 7, declarations(true));
    const w = source(tensors);
    const bound = bindParameters(w, declarations(false));
    expect(bound.bias).toBeUndefined();
    expect(w.unused()).toEqual(["blk.proj.bias"]);
    expect(declared(declarations(false)).map((p) => p.name)).toEqual([
      "blk.proj.weight",
      "blk.norm.weight",
      "blk.experts",
    ]);
  });

  it("name a missing or mis-shaped tensor when bound", () => {
    const tensors = new Map<string, HostTensor>();
    putParameters(tensors, 7, declarations(false));
    expect(() => bindParameters(source(tensors), declarations(true))).toThrow(
      "tensor blk.proj.bias is missing",
    );
    expect(() => bindParameters(source(tensors), { proj: matrixParam("blk.proj", 5, 32) })).toThrow(
      "blk.proj.weight",
    );
  });

  it("draw each tensor from its own seed, or its seedName's, and store matrices as asked", () => {
    const a = new Map<string, HostTensor>();
    const b = new Map<string, HostTensor>();
    putParameters(a, 1, [f32Param("x", [8], { std: 1 }), f32Param("y", [8], { std: 1 })]);
    putParameters(b, 1, [{ ...f32Param("z", [8], { std: 1 }), seedName: "x" }]);
    expect(b.get("z")?.data).toEqual(a.get("x")?.data);
    expect(a.get("y")?.data).not.toEqual(a.get("x")?.data);
    const q = new Map<string, HostTensor>();
    putParameters(q, 1, declarations(false), { storage: "mxfp4" });
    expect([...q.keys()].sort()).toEqual([
      "blk.experts_blocks",
      "blk.experts_scales",
      "blk.norm.weight",
      "blk.proj.weight_blocks",
      "blk.proj.weight_scales",
    ]);
  });

  it("write a table of ids as I32 and read it back as int32; a float read of it is refused by name", () => {
    const table = { ids: idsParam("blk.tid2eid", [3, 2], (i) => 5 - i) };
    const tensors = new Map<string, HostTensor>();
    putParameters(tensors, 7, table);
    expect(tensors.get("blk.tid2eid")?.dtype).toBe("I32");
    expect([...bindParameters(source(tensors), table).ids]).toEqual([5, 4, 3, 2, 1, 0]);
    expect(() => source(tensors).tensor("blk.tid2eid", [3, 2])).toThrow(
      /blk\.tid2eid is I32, a table of ids/,
    );
  });
});
