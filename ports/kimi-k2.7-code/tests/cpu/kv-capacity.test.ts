import { afterAll, describe, expect, it } from "vitest";
import { Engine, kvFloatsPerToken } from "../../../../src/engine/index.js";
import { portReference } from "../../../../test/helpers/port-reference.js";

const ref = await portReference("kimi-k2.7-code");

const config = ref.referenceConfig;
const model = ref.referenceModel();
const engines: Engine[] = [];
afterAll(() => Promise.all(engines.map((e) => e.close())));

const BLOCK = 16;
/** Bytes one block of 16 tokens takes in the four layers with per-head K/V: 4 x 4 x (16 + 8 + 16) floats a token. */
const PER_HEAD_BLOCK_BYTES = BLOCK * 4 * 4 * 40 * 4;

/** KV floats one token takes over every layer under `switches`, read off the config alone. */
function floatsPerToken(switches: Record<string, string>): number {
  const parsed = ref.architecture.parseConfig(config, "reference config");
  return kvFloatsPerToken(ref.architecture.states(parsed, new Map(Object.entries(switches))));
}

function engine(switches: Record<string, string>, kvCacheBytes: number): Engine {
  const e = new Engine(model, { threads: 1, maxModelLen: 512, blockSize: BLOCK, switches, kvCacheBytes });
  engines.push(e);
  return e;
}

describe("Kimi-K2.7-Code's latent cache against per-head K/V", () => {
  it("states the theory from the config: 4 heads x (16 + 8 + 16) over 32 + 8 values per token and layer", () => {
    const latent = floatsPerToken({});
    const perHead = floatsPerToken({ mla_cache: "per-head" });
    expect(latent).toBe(4 * (32 + 8));
    expect(perHead).toBe(4 * 4 * (16 + 8 + 16));
    expect(floatsPerToken({ mla_cache: "latent" })).toBe(latent);
  });

  it("holds the theory's ratio of tokens in one KV budget", () => {
    const kvCacheBytes = 8 * PER_HEAD_BLOCK_BYTES;
    const latent = engine({}, kvCacheBytes).limits;
    const perHead = engine({ mla_cache: "per-head" }, kvCacheBytes).limits;
    expect(perHead.kvTokenCapacity).toBe(8 * BLOCK);
    const theory = floatsPerToken({ mla_cache: "per-head" }) / floatsPerToken({});
    expect(latent.kvTokenCapacity / perHead.kvTokenCapacity).toBe(theory);
  });
});
