import { describe, expect, it } from "vitest";
import { figureRefs, isBacked, unitFigures } from "./prose.js";

const values = (markdown: string) => unitFigures(markdown).map((f) => [f.value, f.unit, f.line]);

describe("unitFigures", () => {
  it("finds numbers with units the way port pages write them", () => {
    expect(values("window-sized KV gives 5.33x the capacity, within 0.4% of the reference")).toEqual([
      [5.33, "x", 1],
      [0.4, "%", 1],
    ]);
    expect(values("44.5 tok/s at one stream\nload took 2,177 s")).toEqual([
      [44.5, "tok/s", 1],
      [2177, "s", 2],
    ]);
    expect(values("1.35× faster; 30 GiB/s; 12 req/s; 3 ms")).toEqual([
      [1.35, "×", 1],
      [30, "GiB/s", 1],
      [12, "req/s", 1],
      [3, "ms", 1],
    ]);
  });

  it("gives every number of a range or list the unit they share", () => {
    expect(values("weight load 2177 to 356 s; decode 22 to 24 tok/s; 1.35-1.55x; 2, 4 and 8 ms")).toEqual([
      [2177, "s", 1],
      [356, "s", 1],
      [22, "tok/s", 1],
      [24, "tok/s", 1],
      [1.35, "x", 1],
      [1.55, "x", 1],
      [2, "ms", 1],
      [4, "ms", 1],
      [8, "ms", 1],
    ]);
    expect(unitFigures("decode step 32.5 to 24.5 ms")[0]?.text).toBe("32.5 to 24.5 ms");
  });

  it("leaves manifest facts, versions, names and code alone", () => {
    const prose = [
      "512K context on 8 cards, Gaudi software 1.24.1, FP8 experts, 2 x 4 cards, 3 steps, GLM-5.3 and v2.6",
      "needles 3/3 from 16K to 128K, 256K tokens per request",
      "```",
      "decode 99 tok/s",
      "```",
      "run `sleep 5 s` then [[fig:p/decode-9]]",
    ].join("\n");
    expect(unitFigures(prose)).toEqual([]);
  });
});

describe("figureRefs", () => {
  it("lists references with their lines, outside code only", () => {
    expect(
      figureRefs(
        "a [[fig:p/one]] and [[fig:p/two]]\n`[[fig:p/code]]` ``[[fig:p/code2]]``\n\n[[fig: p/three ]]",
      ),
    ).toEqual([
      { id: "p/one", line: 1 },
      { id: "p/two", line: 1 },
      { id: " p/three ", line: 4 },
    ]);
  });
});

describe("isBacked", () => {
  it("accepts a record number that rounds to the written figure, and nothing further away", () => {
    expect(isBacked({ value: 5.33, decimals: 2 }, [5.3333])).toBe(true);
    expect(isBacked({ value: 2177, decimals: 0 }, [2177.4])).toBe(true);
    expect(isBacked({ value: 0.4, decimals: 1 }, [-0.4])).toBe(true);
    expect(isBacked({ value: 5.33, decimals: 2 }, [5.34, 53.3])).toBe(false);
    expect(isBacked({ value: 1, decimals: 0 }, [])).toBe(false);
  });
});
