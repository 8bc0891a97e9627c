import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isBringupError } from "../common/errors.js";
import { encodeSafetensorsHeader, parseSafetensorsHeader } from "./safetensors-header.js";

const text = (value: unknown) =>
  new TextEncoder().encode(typeof value === "string" ? value : JSON.stringify(value));
const parse = (header: unknown, dataLength = 1 << 20) =>
  parseSafetensorsHeader(text(header), dataLength, "m.safetensors");

describe("safetensors header", () => {
  it("reads tensors in data order, with metadata", () => {
    const parsed = parse(
      {
        __metadata__: { format: "pt" },
        b: { dtype: "BF16", shape: [2, 3], data_offsets: [16, 28] },
        a: { dtype: "F32", shape: [4], data_offsets: [0, 16] },
        empty: { dtype: "U8", shape: [0], data_offsets: [28, 28] },
      },
      28,
    );
    expect(parsed.metadata).toEqual({ format: "pt" });
    expect(parsed.tensors.map((t) => [t.name, t.byteLength])).toEqual([
      ["a", 16],
      ["b", 12],
      ["empty", 0],
    ]);
  });

  it.each([
    ["not JSON", "{nope", /not valid UTF-8 JSON/],
    ["not an object", [1, 2], /JSON object/],
    [
      "unknown dtype",
      { w: { dtype: "F12", shape: [1], data_offsets: [0, 2] } },
      /tensor "w": unknown dtype "F12"/,
    ],
    [
      "shape not matching bytes",
      { w: { dtype: "F32", shape: [3], data_offsets: [0, 8] } },
      /tensor "w": shape \[3\] of F32 needs 12 bytes/,
    ],
    [
      "range past the data",
      { w: { dtype: "U8", shape: [8], data_offsets: [1048570, 1048578] } },
      /tensor "w": .*past the data section/,
    ],
    [
      "overlap",
      {
        a: { dtype: "U8", shape: [8], data_offsets: [0, 8] },
        b: { dtype: "U8", shape: [4], data_offsets: [6, 10] },
      },
      /tensor "b": bytes \[6, 10\] overlap tensor "a"/,
    ],
    [
      "a gap between tensors",
      {
        a: { dtype: "U8", shape: [8], data_offsets: [0, 8] },
        b: { dtype: "U8", shape: [4], data_offsets: [9, 13] },
      },
      /tensor "b": starts at byte 9 of the data section, but the tensor before it ends at 8/,
    ],
    [
      "a gap before the first tensor",
      { a: { dtype: "U8", shape: [8], data_offsets: [4, 12] } },
      /tensor "a": starts at byte 4/,
    ],
    [
      "bytes after the last tensor",
      { a: { dtype: "U8", shape: [8], data_offsets: [0, 8] } },
      /data section is 1048576 bytes but its tensors end at 8; 1048568 bytes follow/,
    ],
    [
      "a name listed twice",
      '{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]},"a":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}}',
      /tensor "a": is listed twice in the header/,
    ],
    [
      "extra keys",
      { w: { dtype: "U8", shape: [1], data_offsets: [0, 1], x: 1 } },
      /exactly dtype, shape and data_offsets/,
    ],
    ["negative shape", { w: { dtype: "U8", shape: [-1], data_offsets: [0, 0] } }, /non-negative/],
    [
      "unsafe offsets",
      { w: { dtype: "U8", shape: [1], data_offsets: [2 ** 60, 2 ** 60 + 1] } },
      /non-negative integers/,
    ],
    ["bad metadata", { __metadata__: { a: 1 } }, /__metadata__ must map strings to strings/],
  ])("rejects %s, naming the file and tensor", (_label, header, message) => {
    expect(() => parse(header)).toThrow(message);
    expect(() => parse(header)).toThrow(/^m\.safetensors/);
  });

  it("encodes offsets past 4 GiB exactly and parses them back", () => {
    const big = 5 * 2 ** 30;
    const { header, tensors } = encodeSafetensorsHeader([
      { name: "huge", dtype: "U8", shape: [big] },
      { name: "after", dtype: "F32", shape: [3, 2] },
    ]);
    expect(header.length % 8).toBe(0);
    expect(tensors[1]?.dataOffsets).toEqual([big, big + 24]);
    const parsed = parseSafetensorsHeader(header, big + 24, "x");
    expect(parsed.tensors.map((t) => t.dataOffsets)).toEqual([
      [0, big],
      [big, big + 24],
    ]);
  });

  it("never crashes on arbitrary bytes or mutated headers: it returns or throws a BringupError", () => {
    const valid = encodeSafetensorsHeader(
      [
        { name: "a", dtype: "F32", shape: [2, 2] },
        { name: "b", dtype: "F8_E4M3", shape: [3] },
      ],
      { k: "v" },
    ).header;
    const check = (bytes: Uint8Array, dataLength: number) => {
      try {
        parseSafetensorsHeader(bytes, dataLength, "f");
      } catch (error) {
        if (!isBringupError(error)) throw error;
      }
    };
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(), (bytes, n) => check(bytes, n)),
      { numRuns: 3000 },
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(valid.length - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
        fc.integer({ min: 0, max: 64 }),
        (edits, dataLength) => {
          const bytes = valid.slice();
          for (const [at, value] of edits) bytes[at] = value;
          check(bytes, dataLength);
        },
      ),
      { numRuns: 3000 },
    );
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(), (value, n) => check(text(value), n)),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.string(),
          fc.record({
            dtype: fc.constantFrom("U8", "F32", "BF16", "F8_E4M3", "Q4"),
            shape: fc.array(fc.integer({ min: -1, max: 5 }), { maxLength: 3 }),
            data_offsets: fc.tuple(fc.integer({ min: -1, max: 80 }), fc.integer({ min: -1, max: 80 })),
          }),
        ),
        (header) => check(text(header), 64),
      ),
      { numRuns: 2000 },
    );
    // Deep nesting makes JSON.parse overflow the stack; that must still be a clean error.
    check(text("[".repeat(200_000)), 0);
  });
});
