import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadCatalog } from "../catalog/index.js";
import {
  createTinyModel,
  findTinySize,
  type LoadedModel,
  loadModel,
  readCorpus,
  type TinySize,
} from "../engine/index.js";
import { EmbeddedServer, type EmbeddedServerOptions } from "./embedded-server.js";
import { cachedModel } from "./model-cache.js";
import { DEFAULT_PORT, PORT_ARCHITECTURES_MODULE, PORT_MODELS } from "./port-models.js";

const REPO = join(import.meta.dirname, "../..");
const dir = await mkdtemp(join(tmpdir(), "bringup-embedded-"));
afterAll(() => rm(dir, { recursive: true, force: true }));

const port = (await loadCatalog(REPO)).ports.find((p) => p.id === DEFAULT_PORT);
const portModel = PORT_MODELS.get(DEFAULT_PORT);
const config = port?.manifest.reference?.config as Record<string, unknown>;
const corpus = await readCorpus();
const cached = await cachedModel(dir, "tiny", {}, () =>
  (portModel as NonNullable<typeof portModel>).tinyModel(config, corpus, { seed: 0 }),
);
const model = await loadModel(cached.dir, { architectures: [portModel?.architecture].filter((a) => !!a) });

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
    const threaded = await answer({ ...options, architecturesModule: PORT_ARCHITECTURES_MODULE });
    const inMemory = await answer(options);
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
