import { createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { requestText } from "./http.js";

const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((done) => s.close(done))));
});

/** A raw HTTP server that hangs up without answering on its first `hangUps` connections. */
async function hangingUpServer(hangUps: number): Promise<{ url: string; connections: () => number }> {
  let connections = 0;
  const server = createServer((socket) => {
    const index = connections++;
    socket.once("data", () => {
      if (index < hangUps) socket.destroy();
      else socket.end("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
    });
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return { url: `http://127.0.0.1:${address.port}/v1/models`, connections: () => connections };
}

describe("requestText", () => {
  it("tries a new connection once when the server hangs up without answering", async () => {
    const server = await hangingUpServer(1);
    await expect(requestText(server.url, { prompt: [1, 2] })).resolves.toBe("ok");
    expect(server.connections()).toBe(2);
  });

  it("names the socket's reason when the second connection fails too, and tries no third", async () => {
    const server = await hangingUpServer(2);
    await expect(requestText(server.url, undefined)).rejects.toMatchObject({
      code: "ENDPOINT_UNREACHABLE",
      message: expect.stringContaining("other side closed"),
    });
    expect(server.connections()).toBe(2);
  });

  it("says a refused connection is refused", async () => {
    const server = await hangingUpServer(0);
    const url = server.url;
    await new Promise((done) => servers.pop()?.close(done));
    await expect(requestText(url, undefined)).rejects.toMatchObject({
      code: "ENDPOINT_UNREACHABLE",
      message: expect.stringContaining("ECONNREFUSED"),
    });
  });
});
