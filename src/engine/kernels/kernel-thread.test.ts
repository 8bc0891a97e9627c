import { describe, expect, it } from "vitest";
import { CONTROL, claimUnits, controlSlots } from "./kernel-thread.js";

/** Runs claimUnits on one thread from counter value `base`; `interfere` may claim as another thread would. */
function claimAll(base: number, units: number, ahead: boolean, interfere?: (ctrl: Int32Array) => void) {
  const ctrl = controlSlots();
  ctrl[CONTROL.NEXT] = base;
  ctrl[CONTROL.FINISHED] = base;
  const runs: [number, number][] = [];
  claimUnits(
    ctrl,
    base,
    units,
    (unit, next) => {
      runs.push([unit, next]);
      interfere?.(ctrl);
    },
    ahead,
  );
  return { runs, ctrl };
}

describe("claimUnits", () => {
  it("runs every unit once, in order, telling none its next unless it claims ahead", () => {
    const plain = claimAll(40, 5, false);
    expect(plain.runs).toEqual([0, 1, 2, 3, 4].map((u) => [u, -1]));
    const ahead = claimAll(40, 5, true);
    expect(ahead.runs).toEqual([
      [0, 1],
      [1, 2],
      [2, 3],
      [3, 4],
      [4, -1],
    ]);
    for (const { ctrl } of [plain, ahead]) {
      expect(ctrl[CONTROL.NEXT]).toBe(45);
      expect(ctrl[CONTROL.FINISHED]).toBe(45);
    }
  });

  it("across the counter's wrap-around, and with no units", () => {
    const base = 0x7ffffffe;
    const { runs, ctrl } = claimAll(base, 4, true);
    expect(runs.map(([u]) => u)).toEqual([0, 1, 2, 3]);
    expect(ctrl[CONTROL.FINISHED]).toBe((base + 4) | 0);
    expect(claimAll(7, 0, true).runs).toEqual([]);
  });

  it("runs the unit it holds and leaves the ones another thread took", () => {
    // Another thread takes one unit while each of this thread's runs.
    const { runs, ctrl } = claimAll(0, 9, true, (c) => {
      if ((Atomics.load(c, CONTROL.NEXT) | 0) < 9) Atomics.add(c, CONTROL.NEXT, 1);
    });
    // Claimed here: 0 and 1 before the first run; then 2 is the other's, 3 held; 4 the other's...
    expect(runs).toEqual([
      [0, 1],
      [1, 3],
      [3, 5],
      [5, 7],
      [7, -1],
    ]);
    expect(ctrl[CONTROL.FINISHED]).toBe(5);
  });
});
