import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { StopStringMatcher } from "./stop-strings.js";

/** Feeds `pieces` through a matcher; returns what it released and the stop string it hit. */
function run(stops: string[], pieces: string[]): { out: string; stop?: string } {
  const m = new StopStringMatcher(stops);
  let out = "";
  for (const piece of pieces) {
    const step = m.push(piece);
    out += step.text;
    if (step.stop !== undefined) return { out, stop: step.stop };
  }
  return { out: out + m.flush() };
}

describe("StopStringMatcher", () => {
  it("cuts the output at a stop string split across pieces", () => {
    expect(run(["END"], ["abc E", "N", "Dxyz"])).toEqual({ out: "abc ", stop: "END" });
  });

  it("holds back only a tail that could still start a stop string", () => {
    const m = new StopStringMatcher(["xyz"]);
    expect(m.push("hello x").text).toBe("hello ");
    expect(m.push("y").text).toBe("");
    expect(m.push("a").text).toBe("xya");
    expect(m.flush()).toBe("");
  });

  it("matches nothing while told not to, not even later (vLLM before min_tokens)", () => {
    const m = new StopStringMatcher(["END"]);
    expect(m.push("a END b", false)).toEqual({ text: "a END b" });
    expect(m.push(" E", false)).toEqual({ text: " " });
    expect(m.push("ND c")).toEqual({ text: "", stop: "END" });
  });

  it("picks the earliest of several stop strings", () => {
    expect(run(["zz", "b"], ["azz b"])).toEqual({ out: "a", stop: "zz" });
  });

  it("releases everything at the end when nothing matched", () => {
    expect(run(["never"], ["some ", "text ne", "v"])).toEqual({ out: "some text nev" });
  });

  it("releases exactly the text before the stop string, however the text is split", () => {
    const letter = fc.constantFrom("a", "b", "c");
    fc.assert(
      fc.property(
        fc.string({ unit: letter }),
        fc.string({ unit: letter, minLength: 1, maxLength: 3 }),
        fc.array(fc.nat(8)),
        (text, stop, cuts) => {
          const points = [...new Set(cuts.map((c) => Math.min(c, text.length)))].sort((a, b) => a - b);
          const pieces = [...points, text.length].map((end, i) =>
            text.slice(i === 0 ? 0 : (points[i - 1] ?? 0), end),
          );
          const at = text.indexOf(stop);
          expect(run([stop], pieces)).toEqual(at >= 0 ? { out: text.slice(0, at), stop } : { out: text });
        },
      ),
    );
  });
});
