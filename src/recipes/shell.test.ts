import { spawnSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isBringupError } from "../common/errors.js";
import { assertPlainValue, shellQuote, shellWord } from "./shell.js";

/** What sh makes of `printf %s <word>`. */
function shellSees(word: string): string {
  const result = spawnSync("/bin/sh", ["-c", `printf '%s' ${word}`], { encoding: "utf8" });
  expect(result.status).toBe(0);
  return result.stdout;
}

describe("shellQuote", () => {
  it("keeps metacharacters literal", () => {
    for (const value of [
      "$(id)",
      "`id`",
      "a'b",
      "';touch pwned;'",
      "$HOME$((1+1))",
      "x|y&z;w>v<u",
      "*",
      "\\",
    ]) {
      expect(shellSees(shellQuote(value))).toBe(value);
    }
  });

  it("round-trips any string without NUL through sh", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme-ascii" }), (value) => {
        expect(shellSees(shellQuote(value))).toBe(value);
      }),
      { numRuns: 30 },
    );
  });

  it("leaves plain words bare and quotes the rest", () => {
    expect(shellWord("0.11.2+hpu.1")).toBe("0.11.2+hpu.1");
    expect(shellWord("a b")).toBe("'a b'");
    expect(shellSees(shellWord("a'b"))).toBe("a'b");
  });
});

describe("assertPlainValue", () => {
  it("accepts one printable word and rejects whitespace and control characters", () => {
    expect(assertPlainValue("f", "$(x)")).toBe("$(x)");
    for (const value of ["a b", "a\nb", "a\tb", "", "a\u0000b"]) {
      try {
        assertPlainValue("software.pins.vllm", value);
        expect.unreachable(`accepted ${JSON.stringify(value)}`);
      } catch (error) {
        expect(isBringupError(error) && error.code).toBe("RECIPE_VALUE_UNSAFE");
        expect((error as Error).message).toContain("software.pins.vllm");
      }
    }
  });
});
