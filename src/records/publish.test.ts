import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { publishRecords } from "./publish.js";
import { appendRecord, readRecords } from "./store.js";
import { demoRecord } from "./tests/demo-record.js";

/** A record of run `slug` whose one sample is `value`. */
function record(slug: string, value = 43.9) {
  return demoRecord(slug, { arms: [{ name: "port", samples: [value] }] });
}

describe("publishRecords", () => {
  let dir: string;
  let local: string;
  let published: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "bringup-publish-"));
    local = join(dir, "local");
    published = join(dir, "published");
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("shows what it would add on a dry run and writes nothing", async () => {
    await appendRecord(local, record("a"));
    const plan = await publishRecords(local, published, { dryRun: true });
    expect(plan.adds.map(({ record, file }) => [record.id, file])).toEqual([["demo/a", "records.jsonl"]]);
    expect(await readRecords(published)).toEqual([]);
    expect((await readRecords(local)).map((r) => r.id)).toEqual(["demo/a"]);
  });

  it("appends each record to the published file of its name, then empties the local store", async () => {
    await appendRecord(local, record("ab"));
    await appendRecord(local, record("ab-t001-a"), "bench-trials.jsonl");
    await appendRecord(published, record("old"));
    const plan = await publishRecords(local, published);
    expect(plan.adds.map(({ record }) => record.id)).toEqual(["demo/ab-t001-a", "demo/ab"]);
    expect((await readRecords(published)).map((r) => r.id)).toEqual([
      "demo/ab-t001-a",
      "demo/old",
      "demo/ab",
    ]);
    expect(await readFile(join(published, "records.jsonl"), "utf8")).toMatch(/^\{"schema".*demo\/old/);
    expect(await readdir(local)).toEqual([]);
  });

  it("publishes only the named records with their trials, skips what is already published", async () => {
    await appendRecord(local, record("ab"));
    await appendRecord(local, record("ab-t001-a"), "bench-trials.jsonl");
    await appendRecord(local, record("quick"));
    await appendRecord(published, record("ab"));
    const plan = await publishRecords(local, published, { ids: ["demo/ab"] });
    expect(plan.adds.map(({ record }) => record.id)).toEqual(["demo/ab-t001-a"]);
    expect(plan.alreadyPublished).toEqual(["demo/ab"]);
    expect((await readRecords(local)).map((r) => r.id)).toContain("demo/quick");
    await expect(publishRecords(local, published, { ids: ["demo/nope"] })).rejects.toMatchObject({
      code: "RECORD_NOT_LOCAL",
    });
  });

  it("refuses an id published with other content, writing nothing", async () => {
    await appendRecord(local, record("a", 1));
    await appendRecord(local, record("b", 1));
    await appendRecord(published, record("b", 2));
    const before = await readFile(join(published, "records.jsonl"), "utf8");
    await expect(publishRecords(local, published)).rejects.toMatchObject({ code: "RECORD_PUBLISH_CONFLICT" });
    expect(await readFile(join(published, "records.jsonl"), "utf8")).toBe(before);
  });
});
