import { describe, expect, it } from "vitest";
import { z } from "zod";
import { formatProblem, issueProblems } from "./problems.js";

const Item = z.union([z.strictObject({ record: z.string() }), z.strictObject({ text: z.string() })]);
const Shape = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("circle"), radius: z.number() }),
  z.strictObject({ kind: z.literal("square"), side: z.number().positive() }),
]);
const Doc = z.strictObject({
  items: z.array(Item),
  shapes: z.array(Shape).default([]),
  name: z.string().optional(),
});

function problemsOf(data: unknown) {
  const result = Doc.safeParse(data);
  if (result.success) return [];
  return issueProblems(result.error.issues, {
    file: "doc.yaml",
    schema: Doc,
    data,
    lineOf: (path) => path.length,
  });
}

describe("issueProblems", () => {
  it("lists the forms a union accepts and the kinds a discriminated union knows", () => {
    expect(problemsOf({ items: [{ record: "a", text: "b" }], shapes: [{ kind: "hexagon" }] })).toEqual([
      {
        file: "doc.yaml",
        line: 2,
        field: "items.0",
        message: "matches none of the accepted forms",
        expected: "{ record } or { text }",
      },
      {
        file: "doc.yaml",
        line: 3,
        field: "shapes.0.kind",
        message: "unknown kind",
        expected: "one of circle, square",
      },
    ]);
  });

  it("names unknown fields with the fields of the matching branch, and missing ones as missing", () => {
    expect(
      problemsOf({ items: [], shapes: [{ kind: "square", side: -1, radius: 2 }, { kind: "circle" }] }),
    ).toEqual([
      expect.objectContaining({
        field: "shapes.0.side",
        message: "too small",
        expected: "more than 0",
      }),
      expect.objectContaining({
        field: "shapes.0.radius",
        message: 'unknown field "radius"',
        expected: "one of the fields kind, side",
      }),
      expect.objectContaining({ field: "shapes.1.radius", message: "missing", expected: "a number" }),
    ]);
    expect(problemsOf({ items: [], name: 3 })).toEqual([
      expect.objectContaining({ field: "name", message: "wrong type (got number)", expected: "a string" }),
    ]);
  });
});

describe("formatProblem", () => {
  it("prints file:line: field: message (expected ...), leaving out what is unknown", () => {
    expect(formatProblem({ file: "a.yaml", line: 3, field: "id", message: "bad", expected: "a slug" })).toBe(
      "a.yaml:3: id: bad (expected a slug)",
    );
    expect(formatProblem({ file: "ports/x/README.md", message: "missing required file" })).toBe(
      "ports/x/README.md: missing required file",
    );
  });
});
