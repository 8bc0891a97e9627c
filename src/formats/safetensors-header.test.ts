import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isBringupError } from "../common/errors.js";
import {
  checkpointBudget,
  encodeSafetensorsHeader,
  MAX_DIMENSIONS,
  MAX_METADATA_ENTRIES,
  MAX_NAME_BYTES,
  MAX_TENSORS,
  MAX_TEXT_CHARS,
  parseSafetensorsHeader,
} from "./safetensors-header.js";

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
    ["not JSON", "{nope", /not valid JSON as safetensors reads it/],
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
      /tensor "w": .*not a range inside the data section/,
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
      "a field given twice",
      '{"w":{"dtype":"U8","dtype":"U8","shape":[4],"data_offsets":[0,4]}}',
      /tensor "w": the entry gives dtype twice/,
    ],
    ["a missing field", { w: { dtype: "U8", shape: [1] } }, /tensor "w": the entry lacks data_offsets/],
    [
      "negative shape",
      { w: { dtype: "U8", shape: [-1], data_offsets: [0, 0] } },
      /unsigned integers.*found -1/,
    ],
    ["a shape of floats", '{"w":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}', /found 1\.0/],
    ["minus zero", '{"w":{"dtype":"U8","shape":[1],"data_offsets":[-0,1]}}', /found -0/],
    ["an exponent", '{"w":{"dtype":"U8","shape":[1e0],"data_offsets":[0,1]}}', /found 1e0/],
    [
      "offsets past any file",
      { w: { dtype: "U8", shape: [1], data_offsets: [2 ** 60, 2 ** 60 + 1] } },
      /not a range inside the data section/,
    ],
    [
      "a shape of 2^64 elements or more, though a zero follows",
      '{"w":{"dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}}',
      /2\^64 bytes or more/,
    ],
    [
      "a byte-order mark",
      `\ufeff${JSON.stringify({ w: { dtype: "U8", shape: [0], data_offsets: [0, 0] } })}`,
      /JSON object/,
    ],
    [
      "a lone surrogate",
      '{"w\\ud800":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}',
      /lone leading surrogate/,
    ],
    [
      "a lone trailing surrogate",
      '{"w\\udc00":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}',
      /lone trailing surrogate/,
    ],
    ["a NUL in a name", '{"w\\u0000":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}', /control character/],
    ["__metadata__ twice", '{"__metadata__":{},"__metadata__":{}}', /__metadata__ is given twice/],
    ["nesting past 127", `{"w":{"x":${"[".repeat(126)}${"]".repeat(126)}}}`, /nesting deeper than 127/],
    ["text after the object", "{} {}", /unexpected text after the JSON value/],
    ["bad metadata", { __metadata__: { a: 1 } }, /__metadata__ must map strings to strings/],
  ])("rejects %s, naming the file and tensor", (_label, header, message) => {
    expect(() => parse(header)).toThrow(message);
    expect(() => parse(header)).toThrow(/^m\.safetensors/);
  });

  it("reads what the reference library reads: other fields, array entries, repeated names, huge empty dimensions", () => {
    const header =
      '{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"x":[1.5,{"y":null}]},' +
      '"b":["U8",[1],[9,10]],"c":{"dtype":{"U8":null},"shape":[0],"data_offsets":[3,3]},' +
      '"d":{"dtype":"U8","shape":[18446744073709551615,0],"data_offsets":[3,3]},' +
      '"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]},"__metadata__":{"k":"1","k":"2"}}';
    const parsed = parse(header, 3);
    expect(parsed.metadata).toEqual({ k: "2" });
    expect(parsed.tensors.map((t) => [t.name, t.dataOffsets.join("-")])).toEqual([
      ["a", "0-2"],
      ["b", "2-3"],
      ["c", "3-3"],
      ["d", "3-3"],
    ]);
  });

  it("refuses a header of more tensors than the budget as soon as there are, and names too long", () => {
    const entry = (i: number) => `"t${i}":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}`;
    const header = `{${Array.from({ length: 10 }, (_, i) => entry(i)).join(",")}}`;
    const budget = { ...checkpointBudget(), tensors: 10 };
    expect(
      parse(header, 0) && parseSafetensorsHeader(text(header), 0, "m.safetensors", budget).tensors,
    ).toHaveLength(10);
    expect(budget.tensors).toBe(0);
    expect(() =>
      parseSafetensorsHeader(text(header), 0, "m.safetensors", { ...checkpointBudget(), tensors: 9 }),
    ).toThrow(/more than 262144 tensors/);
    const long = `{"${"n".repeat(MAX_NAME_BYTES + 1)}":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}`;
    expect(() => parse(long, 0)).toThrow(/string longer than 4096 bytes/);
  });

  it("refuses shapes, names and metadata past a checkpoint's bounds, counted across its shards", () => {
    const ones = Array.from({ length: MAX_DIMENSIONS + 1 }, () => 1).join(",");
    expect(() => parse(`{"t":{"dtype":"U8","shape":[${ones}],"data_offsets":[0,1]}}`, 1)).toThrow(
      /shapes list more than 2097152 dimensions/,
    );
    const entries = (n: number, value: string) =>
      `{"__metadata__":{${Array.from({ length: n }, (_, i) => `"k${i}":"${value}"`).join(",")}}}`;
    expect(() => parse(entries(MAX_METADATA_ENTRIES + 1, ""), 0)).toThrow(/more than 65536 entries/);
    expect(() => parse(entries(9, "v".repeat(MAX_TEXT_CHARS / 8)), 0)).toThrow(
      /names and metadata come to more than 33554432 characters/,
    );
    // One budget for the checkpoint: what one shard spends, the next no longer has.
    const budget = checkpointBudget();
    const name = "n".repeat(MAX_NAME_BYTES);
    const shard = (from: number, count: number) =>
      `{${Array.from({ length: count }, (_, i) => `"${name.slice(6)}${String(from + i).padStart(6, "0")}":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}`).join(",")}}`;
    expect(parseSafetensorsHeader(text(shard(0, 4096)), 0, "a", budget).tensors).toHaveLength(4096);
    expect(budget.tensors).toBe(MAX_TENSORS - 4096);
    expect(() => parseSafetensorsHeader(text(shard(4096, 4097)), 0, "b", budget)).toThrow(
      /more than 33554432 characters/,
    );
    expect(parse(shard(0, 4096), 0).tensors).toHaveLength(4096);
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
