import { afterAll, describe, expect, it } from "vitest";
import { createTinyModel, findTinySize, type LoadedModel, type TinySize } from "../engine/index.js";
import { EmbeddedServer } from "./embedded-server.js";

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
