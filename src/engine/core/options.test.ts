import { describe, expect, it } from "vitest";
import { createTinyModel } from "../tiny/generate.js";
import { findTinySize, type TinySize } from "../tiny/sizes.js";
import { resolveLimits } from "./options.js";

const model = await createTinyModel(findTinySize("tiny") as TinySize);
const resolve = (options: Parameters<typeof resolveLimits>[2]) =>
  resolveLimits(model.model, model.config, options);
/** Bytes one token takes over the tiny model's layers: 2 KV heads of 16 for keys and values. */
const bytesPerToken = model.model.layers.length * 2 * 2 * 16 * 4;

describe("resolveLimits", () => {
  it("defaults to the model's context and room for max_num_seqs of it, at most 1 GiB", () => {
    const { limits, units } = resolve({ maxNumSeqs: 2 });
    const maxLen = model.config.maxPositionEmbeddings;
    expect(limits).toMatchObject({
      maxNumSeqs: 2,
      maxModelLen: maxLen,
      blockSize: 16,
      maxNumBatchedTokens: 2048,
      kvLayout: "window-sized",
      kvCacheBytes: 2 * maxLen * bytesPerToken,
      kvBlocks: (2 * maxLen) / 16,
      stateSlots: 0,
      kvTokenCapacity: 2 * maxLen,
    });
    expect(units).toEqual([limits.kvBlocks]);
    expect(limits.kvGroups).toEqual([
      {
        kind: "full",
        numLayers: model.model.layers.length,
        blocks: limits.kvBlocks,
        ringBlocks: 0,
        bytesPerBlock: 16 * bytesPerToken,
      },
    ]);
  });

  it("names the option to fix", () => {
    for (const [options, subject] of [
      [{ maxNumSeqs: 0 }, "max_num_seqs"],
      [{ blockSize: 2.5 }, "block_size"],
      [{ kvCacheBytes: -1 }, "kv_cache_bytes"],
      [{ switches: { kda_prefill: "chunked" } }, "kda_prefill"],
      [{ switches: { mxfp4: "unpacked" } }, "mxfp4"],
    ] as const) {
      expect(() => resolve(options)).toThrow(
        expect.objectContaining({ code: "ENGINE_OPTIONS_INVALID", subject }),
      );
    }
    expect(() => resolve({ kvCacheBytes: 16 * bytesPerToken - 1 })).toThrow(
      expect.objectContaining({ code: "KV_BUDGET_TOO_SMALL" }),
    );
  });
});
