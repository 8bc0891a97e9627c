import { describe, expect, it } from "vitest";
import { SliceQueue } from "./slices.js";

describe("SliceQueue", () => {
  it("runs every item once, in order", async () => {
    const queue = new SliceQueue(1, 4);
    const ran: number[] = [];
    const done = new Promise<void>((resolve) => {
      for (let i = 0; i < 50; i++) {
        queue.defer({
          run: () => {
            ran.push(i);
            if (i === 49) resolve();
            return i % 3 === 0;
          },
        });
      }
    });
    await done;
    expect(ran).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(queue.length).toBe(0);
  });

  it("lets I/O callbacks run between slices once a slice settled its share", async () => {
    const queue = new SliceQueue(1000, 2);
    const order: string[] = [];
    await new Promise<void>((resolve) => {
      for (let i = 0; i < 6; i++) {
        queue.defer({
          run: () => {
            order.push(`item ${i}`);
            if (i === 5) resolve();
            return true;
          },
        });
      }
      // Queued before the first slice runs, so it lands between the first and second slice.
      setImmediate(() => order.push("between"));
    });
    expect(order).toEqual(["item 0", "item 1", "between", "item 2", "item 3", "item 4", "item 5"]);
  });
});
