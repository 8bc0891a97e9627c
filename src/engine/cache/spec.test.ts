import { describe, expect, it } from "vitest";
import { cacheSpecFor } from "./spec.js";

describe("cacheSpecFor", () => {
  it("chooses by attention kind and KV layout; a sliding mask shares the full layers' tables", () => {
    expect(cacheSpecFor({ kind: "full" }, 16, "window-sized")).toMatchObject({
      key: "full",
      spec: { kind: "full" },
    });
    expect(cacheSpecFor({ kind: "full" }, 16, "full")).toMatchObject({ key: "full", spec: { kind: "full" } });
    const ring = cacheSpecFor({ kind: "sliding", window: 128 }, 16, "window-sized");
    expect(ring).toMatchObject({ key: "window:128", spec: { kind: "sliding-window", ringBlocks: 16 } });
    const masked = cacheSpecFor({ kind: "sliding", window: 128 }, 16, "full");
    expect(masked).toMatchObject({ key: "full", spec: { kind: "sliding-mask", ringBlocks: 0 } });
    expect(masked.spec.firstVisible(200)).toBe(73);
  });

  it("names what is missing for an unknown attention kind", () => {
    expect(() => cacheSpecFor({ kind: "linear" }, 16)).toThrow(
      /no KV cache spec for attention kind "linear"/,
    );
  });
});
