import { describe, expect, it } from "vitest";
import { isBringupError } from "../../common/errors.js";
import { planKvCache } from "./capacity.js";
import { BlockPlacement } from "./placement.js";
import { LayerStorage, layerStorage, PagedKv, PagedRows, SequenceSlots } from "./storage.js";

describe("layer storage", () => {
  const plan = planKvCache(
    [
      {
        latent: { kind: "latent", latentDim: 6, ropeDim: 2 },
        keys: { kind: "indexer-keys", headDim: 4 },
      },
      { kv: { kind: "sliding-window", window: 4, numKvHeads: 2, headDim: 3, vHeadDim: 2 } },
      { tail: { kind: "conv-tail", channels: 3, kernel: 3 } },
    ],
    "window-sized",
    2,
  );
  const storage = plan.layers.map((planned) => layerStorage(planned, [5, 4, 3]));

  it("gives each state the kind of storage its spec asks for, sized by its pool's units", () => {
    const latent = storage[0]?.rows("latent");
    expect([latent?.width, latent?.rows.length, latent?.group]).toEqual([8, 5 * 2 * 8, 0]);
    expect(storage[0]?.rows("keys").width).toBe(4);
    const kv = storage[1]?.kv("kv");
    expect([kv?.keys.length, kv?.values.length, kv?.placement.ringBlocks, kv?.group]).toEqual([
      4 * 2 * 6,
      4 * 2 * 4,
      4,
      1,
    ]);
    const tail = storage[2]?.slots("tail");
    expect([tail?.numSlots, tail?.floats]).toEqual([3, 6]);
    expect(storage[0]?.rows("latent").rows.buffer).toBeInstanceOf(SharedArrayBuffer);
  });

  it("refuses a state read as another kind, or one never declared, naming it", () => {
    const codes = [
      () => storage[0]?.kv("latent"),
      () => storage[1]?.slots("kv"),
      () => storage[2]?.rows("tail"),
      () => LayerStorage.NONE.kv("kv"),
    ].map((read) => {
      try {
        read();
        return "read";
      } catch (error) {
        return isBringupError(error)
          ? `${error.code} ${error.message.split(" but ")[1]?.split(";")[0]}`
          : "other";
      }
    });
    expect(codes).toEqual([
      "STATE_STORAGE_MISMATCH declared it as paged-rows",
      "STATE_STORAGE_MISMATCH declared it as paged-kv",
      "STATE_STORAGE_MISMATCH declared it as slots",
      "STATE_STORAGE_MISMATCH declared no such state",
    ]);
  });

  it("writes a token's row into its slot and copies whole blocks and slots", () => {
    const placement = new BlockPlacement(2, 0, false);
    const kv = new PagedKv(placement, 0, 3, 1, 2, 1);
    kv.write(placement.slot([2, 0], 1), Float32Array.of(7, 8), 0, Float32Array.of(9), 0);
    expect([...kv.keys.subarray(10, 12), kv.values[5]]).toEqual([7, 8, 9]);
    kv.copyBlock(2, 1);
    expect([...kv.keys.subarray(6, 8), kv.values[3]]).toEqual([7, 8, 9]);
    const rows = new PagedRows(placement, 0, 2, 3);
    rows.write(3, Float32Array.of(0, 1, 2, 3), 1);
    rows.copyBlock(1, 0);
    expect([...rows.rows.subarray(3, 6)]).toEqual([1, 2, 3]);
    const slots = new SequenceSlots(2, 2);
    slots.view(1).set([4, 5]);
    slots.copySlot(1, 0);
    expect([...slots.data]).toEqual([4, 5, 4, 5]);
  });
});
