import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isBringupError } from "../common/errors.js";
import { appendRecord, parseRecords, readRecords } from "./store.js";
import { demoRecord } from "./tests/demo-record.js";

const record = demoRecord;

async function rejection(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (isBringupError(error)) return error;
    throw error;
  }
  throw new Error("expected a BringupError");
}

describe("records store", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "bringup-records-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("appends whole lines and reads them back in order", async () => {
    await appendRecord(dir, record("a"));
    await appendRecord(dir, record("b"));
    const text = await readFile(join(dir, "records.jsonl"), "utf8");
    expect(text.split("\n")).toHaveLength(3);
    expect(text.endsWith("\n")).toBe(true);
    expect((await readRecords(dir)).map((r) => r.id)).toEqual(["demo/a", "demo/b"]);
  });

  it("never rewrites: the bytes already there stay a prefix of the file", async () => {
    await appendRecord(dir, record("a"));
    const before = await readFile(join(dir, "records.jsonl"), "utf8");
    await appendRecord(dir, record("b"));
    const after = await readFile(join(dir, "records.jsonl"), "utf8");
    expect(after.startsWith(before)).toBe(true);
  });

  it("refuses an invalid record, a duplicate id and a bad file name, writing nothing", async () => {
    const invalid = await rejection(appendRecord(dir, record("x", { method: "vibes" as never })));
    expect(invalid.code).toBe("RECORD_INVALID");
    expect(invalid.message).toContain("method");
    await appendRecord(dir, record("a"));
    const before = await readFile(join(dir, "records.jsonl"), "utf8");
    expect((await rejection(appendRecord(dir, record("a")))).code).toBe("RECORD_EXISTS");
    expect((await rejection(appendRecord(dir, record("c"), "../x.jsonl"))).code).toBe("RECORDS_FILE_INVALID");
    expect(await readFile(join(dir, "records.jsonl"), "utf8")).toBe(before);
  });

  it("refuses to append after an unterminated last line", async () => {
    await writeFile(join(dir, "records.jsonl"), JSON.stringify(record("a")));
    expect((await rejection(appendRecord(dir, record("b")))).code).toBe("RECORDS_CORRUPT");
  });

  it("reads every *.jsonl file and treats a missing directory as empty", async () => {
    await appendRecord(dir, record("a"), "b.jsonl");
    await appendRecord(dir, record("b"), "a.jsonl");
    await writeFile(join(dir, "notes.txt"), "not a store file");
    expect((await readRecords(dir)).map((r) => r.id)).toEqual(["demo/b", "demo/a"]);
    expect(await readRecords(join(dir, "absent"))).toEqual([]);
  });

  it("names the file and line of a bad line and of a duplicate id", async () => {
    const good = JSON.stringify(record("a"));
    await writeFile(join(dir, "records.jsonl"), `${good}\n{"schema":\n${good}\n`);
    const error = await rejection(readRecords(dir));
    expect(error.code).toBe("RECORDS_INVALID");
    expect(error.message).toContain(`${join(dir, "records.jsonl")}:2: not valid JSON`);
    expect(error.message).toContain(`${join(dir, "records.jsonl")}:3: id: duplicate record id demo/a`);
  });
});

describe("parseRecords", () => {
  it("reports each schema problem with its line, field and what was expected", () => {
    const lines = [
      JSON.stringify(record("a", { unit: "furlongs" as never })),
      JSON.stringify(record("b", { method: "different-conditions", arms: [{ name: "x", samples: [1] }] })),
      JSON.stringify({ ...record("c"), colour: "red" }),
    ];
    const { records, problems } = parseRecords(lines.join("\n"), "r.jsonl");
    expect(records).toEqual([]);
    expect(problems).toContainEqual(
      expect.objectContaining({ line: 1, field: "unit", expected: expect.stringContaining("tok/s") }),
    );
    expect(problems).toContainEqual(
      expect.objectContaining({
        line: 2,
        field: "conditions",
        message: expect.stringContaining("name each condition"),
      }),
    );
    expect(problems).toContainEqual(
      expect.objectContaining({ line: 3, field: "colour", message: 'unknown field "colour"' }),
    );
  });

  it("rejects a same-pod A/B whose arms ran on different hosts", () => {
    const line = JSON.stringify(
      record("ab", {
        method: "same-pod-ab",
        arms: [
          { name: "a", samples: [1], fingerprint: { host: "pod-1", hardware: "gaudi2" } },
          { name: "b", samples: [2], fingerprint: { host: "pod-2", hardware: "gaudi2" } },
        ],
      }),
    );
    const { problems } = parseRecords(line, "r.jsonl");
    expect(problems).toEqual([
      expect.objectContaining({
        line: 1,
        field: "arms.1.fingerprint.host",
        expected: expect.stringContaining("different-conditions"),
      }),
    ]);
  });
});
