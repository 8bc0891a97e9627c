import { mkdtemp, open, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSafetensors } from "./safetensors-reader.js";
import { SafetensorsWriter, writeSafetensors } from "./safetensors-writer.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "bringup-st-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A file written byte by byte as the format describes, not by our writer. */
function handMade(header: string, data: number[]): Uint8Array {
  const json = new TextEncoder().encode(header);
  const out = new Uint8Array(8 + json.length + data.length);
  out[0] = json.length & 0xff;
  out[1] = json.length >> 8;
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

describe("safetensors files", () => {
  it("reads a hand-made file", async () => {
    const path = join(dir, "a.safetensors");
    await writeFile(
      path,
      handMade('{"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"__metadata__":{"m":"1"}}  ', [7, 9]),
    );
    const file = await openSafetensors(path);
    expect(file.metadata).toEqual({ m: "1" });
    expect(Array.from(await file.readTensor("x"))).toEqual([7, 9]);
    await expect(file.readTensorRange("x", 1, 3)).rejects.toThrow(/outside the tensor/);
    expect(() => file.tensor("y")).toThrow(/no tensor named "y"/);
    await file.close();
  });

  it("round-trips through the writer with metadata, leaving no temporary files", async () => {
    const path = join(dir, "b.safetensors");
    const w = new Float32Array([1.5, -2, 3.25]);
    await writeSafetensors(
      path,
      [
        { name: "w", dtype: "F32", shape: [3], data: new Uint8Array(w.buffer) },
        { name: "s", dtype: "U8", shape: [1, 2], data: new Uint8Array([4, 5]) },
      ],
      { format: "pt" },
    );
    expect(await readdir(dir)).toEqual(["b.safetensors"]);
    const file = await openSafetensors(path);
    expect(file.metadata).toEqual({ format: "pt" });
    expect(file.dataStart % 8).toBe(0);
    expect(new Float32Array((await file.readTensor("w")).buffer)).toEqual(w);
    expect(Array.from(await file.readTensorRange("s", 1, 2))).toEqual([5]);
    await file.close();
  });

  it("accepts interleaved tensors, each written front to back", async () => {
    const path = join(dir, "i.safetensors");
    const writer = await SafetensorsWriter.create(path, [
      { name: "a", dtype: "U8", shape: [4] },
      { name: "b", dtype: "U8", shape: [2] },
    ]);
    await writer.write("a", new Uint8Array([1, 2]));
    await writer.write("b", new Uint8Array([9]));
    await writer.write("a", new Uint8Array([3, 4]));
    await writer.write("b", new Uint8Array([8]));
    await writer.finish();
    const file = await openSafetensors(path);
    expect(Array.from(await file.readTensor("a"))).toEqual([1, 2, 3, 4]);
    expect(Array.from(await file.readTensor("b"))).toEqual([9, 8]);
    await file.close();
  });

  it("leaves nothing behind when a write is incomplete or wrong", async () => {
    const path = join(dir, "c.safetensors");
    await expect(
      writeSafetensors(path, [{ name: "w", dtype: "F32", shape: [3], data: new Uint8Array(8) }]),
    ).rejects.toThrow(/8 bytes given/);
    const writer = await SafetensorsWriter.create(path, [{ name: "w", dtype: "U8", shape: [4] }]);
    await writer.write("w", new Uint8Array(2));
    await expect(writer.write("v", new Uint8Array(2))).rejects.toThrow(/not in the layout/);
    await expect(writer.write("w", new Uint8Array(3))).rejects.toThrow(/run past its 4 bytes/);
    await expect(writer.finish()).rejects.toThrow(
      /1 tensors were not fully written \(first: "w", 2 of 4 bytes\)/,
    );
    expect(await readdir(dir)).toEqual([]);
  });

  it("rejects truncated files and header lengths past the end, naming the file", async () => {
    const good = handMade('{"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}', [1, 2, 3, 4]);
    const cases: [Uint8Array, RegExp][] = [
      [good.subarray(0, 5), /too short/],
      [
        good.subarray(0, good.length - 1),
        /tensor "x": data_offsets \[0, 4\] are not a range inside the data section/,
      ],
      [handMade("{}", []).map((b, i) => (i === 1 ? 0x10 : b)), /header length 4098 runs past the end/],
    ];
    for (const [bytes, message] of cases) {
      const path = join(dir, "t.safetensors");
      await writeFile(path, bytes);
      await expect(openSafetensors(path)).rejects.toThrow(message);
      await expect(openSafetensors(path)).rejects.toThrow(path);
    }
  });

  it("reads by byte range past 4 GiB in a sparse file", async () => {
    const path = join(dir, "big.safetensors");
    const size = 5 * 2 ** 30 + 8;
    const header = `{"big":{"dtype":"U8","shape":[${size}],"data_offsets":[0,${size}]}}`;
    const head = handMade(header, []);
    const handle = await open(path, "w");
    await handle.write(head, 0, head.length, 0);
    await handle.truncate(head.length + size); // a hole: no 5 GiB written to disk
    const marker = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]);
    await handle.write(marker, 0, 8, head.length + size - 8);
    await handle.close();
    const file = await openSafetensors(path);
    expect(file.tensor("big").byteLength).toBe(size);
    expect(Array.from(await file.readTensorRange("big", size - 8, size))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(Array.from(await file.readTensorRange("big", 2 ** 32, 2 ** 32 + 2))).toEqual([0, 0]);
    await file.close();
  });
});
