import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { portReference } from "../../test/helpers/port-reference.js";
import {
  createTinyModel,
  findTinySize,
  type LoadedModel,
  loadModel,
  type TinySize,
} from "../engine/index.js";
import { DEFAULT_PORT } from "./default-port.js";
import { EmbeddedServer, type EmbeddedServerOptions } from "./embedded-server.js";
import { cachedModel } from "./model-cache.js";

const _REPO = join(import.meta.dirname, "../..");
const dir = await mkdtemp(join(tmpdir(), "bringup-embedded-"));
afterAll(() => rm(dir, { recursive: true, force: true }));

const ref = await portReference(DEFAULT_PORT);
const cached = await cachedModel(dir, "tiny", {}, () => ref.referenceFiles());
const model = await loadModel(cached.dir);

/** A greedy completion's text and its tokens' logprobs, from a server of `options`. */
async function answer(options: EmbeddedServerOptions) {
  const server = await EmbeddedServer.start(options, "window-sized");
  try {
    const res = await fetch(`${server.url}/v1/completions`, {
      method: "POST",
      body: JSON.stringify({
        prompt: "The lamp",
        max_tokens: 12,
        temperature: 0,
        logprobs: 1,
        ignore_eos: true,
      }),
    });
    const json = (await res.json()) as { choices: { text: string; logprobs: unknown }[] };
    return { engineThread: server.engineThread, choice: json.choices[0] };
  } finally {
    await server.close();
  }
}

describe("EmbeddedServer", () => {
  it("runs the engine on its own thread over the model's directory, with the same answers", async () => {
    const options = {
      model,
      servedModelName: "tiny",
      maxModelLen: 256,
      blockSize: 16,
      maxNumSeqs: 4,
      threads: 1,
    };
    const threaded = await answer(options);
    const { directory: _, ...inMemoryModel } = model;
    const inMemory = await answer({ ...options, model: inMemoryModel });
    expect(threaded.engineThread).toBe(true);
    expect(inMemory.engineThread).toBe(false);
    expect(threaded.choice).toEqual(inMemory.choice);
    expect(threaded.choice?.text.length).toBeGreaterThan(0);
  });
});

const tiny = findTinySize("tiny") as TinySize;
const servers: EmbeddedServer[] = [];
afterAll(() => Promise.all(servers.map((s) => s.close())));

async function start(model: LoadedModel): Promise<EmbeddedServer> {
  const server = await EmbeddedServer.start(
    { model, servedModelName: "t", maxModelLen: 128, blockSize: 16, maxNumSeqs: 1, threads: 1 },
    "window-sized",
  );
  servers.push(server);
  return server;
}

describe("EmbeddedServer.restartAs", () => {
  it("restarts as another build on the same URL, its switches reaching the engine", async () => {
    const server = await start(await createTinyModel(tiny, { dtype: "mxfp4" }));
    const url = server.url;
    await server.restartAs("full", { mxfp4: "unpacked" });
    expect(server.url).toBe(url);
    expect(server.layout).toBe("full");
    expect((await fetch(`${url}/health`)).ok).toBe(true);
  });

  it("passes the switches to the engine, which refuses one the model does not have", async () => {
    const server = await start(await createTinyModel(tiny));
    // The same build again is no restart; a build with the mxfp4 switch is one the f32 model refuses.
    await server.restartAs("window-sized");
    await expect(server.restartAs("window-sized", { mxfp4: "unpacked" })).rejects.toThrow(
      /holds no MXFP4 weights/,
    );
  });
});

describe("EmbeddedServer's step size", () => {
  it("reaches the engine, which refuses one it cannot run", async () => {
    const options = {
      model,
      servedModelName: "t",
      maxModelLen: 128,
      blockSize: 16,
      maxNumSeqs: 1,
      threads: 1,
    };
    await expect(
      EmbeddedServer.start({ ...options, maxNumBatchedTokens: 0 }, "window-sized"),
    ).rejects.toThrow(/max_num_batched_tokens/);
    const chunked = await EmbeddedServer.start({ ...options, maxNumBatchedTokens: 61 }, "window-sized");
    servers.push(chunked);
    expect(chunked.maxNumBatchedTokens).toBe(61);
  });
});
