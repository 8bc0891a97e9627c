import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { INDEX_FILE, openCheckpoint, writeCheckpoint, writeShardIndex } from "./checkpoint.js";
import { MAX_TENSORS } from "./safetensors-header.js";
import { writeSafetensors } from "./safetensors-writer.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "bringup-ckpt-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const tensor = (name: string, n: number) => ({
  name,
  dtype: "U8" as const,
  shape: [n],
  data: new Uint8Array(n).fill(n),
});

describe("checkpoints", () => {
  it("writes and reads a sharded checkpoint with an index", async () => {
    const out = join(dir, "ck");
    await writeCheckpoint(out, [tensor("a", 10), tensor("b", 10), tensor("c", 5)], { maxShardBytes: 15 });
    const index = JSON.parse(await readFile(join(out, INDEX_FILE), "utf8"));
    expect(index).toEqual({
      metadata: { total_size: 25 },
      weight_map: {
        a: "model-00001-of-00002.safetensors",
        b: "model-00002-of-00002.safetensors",
        c: "model-00002-of-00002.safetensors",
      },
    });
    const ck = await openCheckpoint(out);
    expect(ck.indexed).toBe(true);
    expect(ck.tensors.map((t) => t.name)).toEqual(["a", "b", "c"]);
    expect(ck.byteLength).toBe(25);
    expect(Array.from(await ck.readTensor("c"))).toEqual([5, 5, 5, 5, 5]);
    await ck.close();
  });

  it("writes an index in pieces, laid out as JSON.stringify lays out the sorted map", async () => {
    for (const count of [0, 1, 3, 5000]) {
      const out = join(dir, `index-${count}`);
      const map = Array.from({ length: count }, (_, i): [string, string] => [
        `layer.${(i * 7919) % 10007}.w"é`,
        `s${i % 3}`,
      ]);
      await writeShardIndex(out, map, 1234);
      const sorted = Object.fromEntries(map.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
      expect(await readFile(join(out, INDEX_FILE), "utf8")).toBe(
        `${JSON.stringify({ metadata: { total_size: 1234 }, weight_map: sorted }, null, 2)}\n`,
      );
    }
  });

  it("opens a single file and a directory without an index", async () => {
    await writeCheckpoint(dir, [tensor("a", 3)]);
    const fromDir = await openCheckpoint(dir);
    const fromFile = await openCheckpoint(join(dir, "model.safetensors"));
    expect(fromDir.tensors.map((t) => t.name)).toEqual(["a"]);
    expect(fromFile.tensor("a").file).toBe(join(dir, "model.safetensors"));
    await fromDir.close();
    await fromFile.close();
  });

  it("names a missing shard, a tensor missing from its shard, and duplicates", async () => {
    await writeSafetensors(join(dir, "one.safetensors"), [tensor("a", 2)]);
    await writeFile(
      join(dir, INDEX_FILE),
      JSON.stringify({ weight_map: { a: "one.safetensors", b: "two.safetensors" } }),
    );
    await expect(openCheckpoint(dir)).rejects.toThrow(/two\.safetensors: missing, yet .* tensor "b"/);
    await writeFile(
      join(dir, INDEX_FILE),
      JSON.stringify({ weight_map: { a: "one.safetensors", b: "one.safetensors" } }),
    );
    await expect(openCheckpoint(dir)).rejects.toThrow(
      /one\.safetensors: .*tensor "b" is here, but it is not/,
    );
    await writeFile(join(dir, INDEX_FILE), "{");
    await expect(openCheckpoint(dir)).rejects.toThrow(/not a valid index/);
    await rm(join(dir, INDEX_FILE));
    await writeSafetensors(join(dir, "two.safetensors"), [tensor("a", 2)]);
    await expect(openCheckpoint(dir)).rejects.toThrow(/"a" is in both one\.safetensors and two\.safetensors/);
    await expect(openCheckpoint(join(dir, "nope"))).rejects.toThrow(/no such file/);
  });

  it("reads an index as JSON does, and refuses one listing more tensors than a checkpoint holds", async () => {
    await writeSafetensors(join(dir, "one.safetensors"), [tensor("a", 2)]);
    await writeFile(
      join(dir, INDEX_FILE),
      JSON.stringify({
        metadata: { total_size: 2, format: "pt" },
        other: [1, { x: null }],
        weight_map: { b: "two.safetensors", a: "one.safetensors" },
      }).replace('"b":', '"a":'), // a name listed twice keeps its last shard
    );
    const ck = await openCheckpoint(dir);
    expect(ck.metadata).toEqual({ format: "pt" });
    expect([...ck.tensors].map((t) => t.name)).toEqual(["a"]);
    await ck.close();
    const names = Array.from({ length: MAX_TENSORS + 1 }, (_, i) => `"t${i}":"one.safetensors"`);
    await writeFile(join(dir, INDEX_FILE), `{"weight_map":{${names.join(",")}}}`);
    await expect(openCheckpoint(dir)).rejects.toMatchObject({
      code: "BAD_INDEX",
      message: expect.stringMatching(/weight_map lists more than 262144 tensors/),
    });
    await writeFile(join(dir, INDEX_FILE), `{"metadata":{}}`);
    await expect(openCheckpoint(dir)).rejects.toThrow(/not a valid index \(it has no weight_map\)/);
  });

  it("refuses a tensor that a shard holds but the index does not list, or lists elsewhere", async () => {
    await writeSafetensors(join(dir, "one.safetensors"), [tensor("a", 2), tensor("c", 3)]);
    await writeSafetensors(join(dir, "two.safetensors"), [tensor("b", 2)]);
    await writeFile(
      join(dir, INDEX_FILE),
      JSON.stringify({ weight_map: { a: "one.safetensors", b: "two.safetensors" } }),
    );
    await expect(openCheckpoint(dir)).rejects.toMatchObject({
      code: "INDEX_DISAGREES",
      message: expect.stringMatching(/one\.safetensors: holds tensor "c", but .* does not list it/),
    });
    await writeFile(
      join(dir, INDEX_FILE),
      JSON.stringify({ weight_map: { a: "one.safetensors", b: "two.safetensors", c: "two.safetensors" } }),
    );
    await expect(openCheckpoint(dir)).rejects.toThrow(/holds tensor "c", but .* puts it in two\.safetensors/);
  });

  it("keeps its open files bounded whatever the number of shards", async () => {
    const shards = 300;
    await writeCheckpoint(
      dir,
      Array.from({ length: shards }, (_, i) => tensor(`t${i}`, 8)),
      { maxShardBytes: 8 },
    );
    expect((await readdir(dir)).filter((n) => n.endsWith(".safetensors"))).toHaveLength(shards);
    const openFiles = async () => (await readdir("/proc/self/fd")).length;
    const before = await openFiles();
    const ck = await openCheckpoint(dir);
    let most = 0;
    for (const t of ck.tensors) {
      expect(await ck.readTensor(t.name)).toEqual(new Uint8Array(8).fill(8));
      most = Math.max(most, (await openFiles()) - before);
    }
    await ck.close();
    expect(most).toBeLessThanOrEqual(16);
    expect(await openFiles()).toBeLessThanOrEqual(before);
  });
});
