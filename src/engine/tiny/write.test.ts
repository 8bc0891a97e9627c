import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BringupError } from "../../common/errors.js";
import type { HostTensor } from "../loader/host-tensor.js";
import { tinyModelFiles, tinyTokenizer } from "./files.js";
import { writeTinyModel } from "./write.js";

const tok = tinyTokenizer("the cat sat on the mat. ".repeat(8), 258, 32);
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), "tiny-write-"));
  dirs.push(dir);
  return join(dir, "model");
};

describe("writeTinyModel", () => {
  const codes = (extra: Partial<HostTensor>): HostTensor => ({
    dtype: "F8_E4M3",
    shape: [1, 32],
    data: new Uint8Array(32).map((_, i) => i),
    ...extra,
  });

  it("writes the tensors' bytes in file order", async () => {
    const out = scratch();
    await writeTinyModel(out, tinyModelFiles({ model_type: "llama" }, tok, new Map([["w", codes({})]])));
    const file = readFileSync(join(out, "model.safetensors"));
    const headerBytes = Number(file.readBigUInt64LE(0));
    expect([...file.subarray(8 + headerBytes)]).toEqual([...Array(32).keys()]);
  });

  it.each([
    ["FP8 codes in lanes order", codes({ fp8Order: "lanes" })],
    ["MXFP4 codes in halves order", codes({ dtype: "U8", shape: [1, 1, 16], mxfp4Order: "halves" })],
  ])("refuses %s and writes nothing", async (_, tensor) => {
    const out = scratch();
    const files = tinyModelFiles({ model_type: "llama" }, tok, new Map([["experts.w", tensor]]));
    const error = await writeTinyModel(out, files).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BringupError);
    expect((error as BringupError).code).toBe("TINY_TENSOR_RELAID");
    expect((error as BringupError).subject).toBe("experts.w");
    expect(existsSync(out)).toBe(false);
  });
});
