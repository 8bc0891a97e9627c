import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTinyModel, findTinySize, type TinySize } from "../engine/index.js";
import { type RunningServer, startServer } from "./index.js";

// A client that never finishes its headers loses its socket; connections over the cap are closed.
const model = await createTinyModel(findTinySize("tiny") as TinySize);
let server: RunningServer;
let port: number;

beforeAll(async () => {
  server = await startServer({ model, port: 0, threads: 1, headersTimeoutSeconds: 1, maxConnections: 2 });
  port = Number(new URL(server.url).port);
});
afterAll(async () => {
  await server.close();
});

/** Resolves with what the server sent before it closed the socket. */
function untilClosed(socket: Socket): Promise<string> {
  let received = "";
  return new Promise((done) => {
    socket.on("data", (d) => {
      received += String(d);
    });
    socket.on("error", () => undefined);
    socket.on("close", () => done(received));
  });
}

describe("slow and surplus clients", () => {
  it("answers 408 and closes a connection whose headers never finish", async () => {
    const slow = connect(port, "127.0.0.1");
    slow.write("POST /v1/completions HTTP/1.1\r\nHost: x\r\n");
    expect(await untilClosed(slow)).toContain("408");
  });

  it("closes connections over the cap at once and keeps serving the rest", async () => {
    const sockets = Array.from({ length: 4 }, () => connect(port, "127.0.0.1"));
    const closed = sockets.map(untilClosed);
    const first = await Promise.race(closed.map((p, i) => p.then(() => i)));
    expect(first).toBeGreaterThanOrEqual(2);
    for (const s of sockets) s.destroy();
    await Promise.all(closed);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });
});
