import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * Small real HTTP servers for tests of misbehaving endpoints: `handle` answers a request or returns
 * undefined to forward it unchanged to `upstream` (when given). Forwarded answers pass through
 * `rewrite` first. Listens on 127.0.0.1 at a free port.
 */
export interface TestServerOptions {
  readonly upstream?: string;
  /** Answer a request yourself: return [status, body text], "hang" to never answer, or undefined to forward. */
  readonly handle?: (path: string, body: unknown) => [number, string] | "hang" | undefined;
  /** Change a request body before forwarding it. */
  readonly rewriteRequest?: (path: string, body: unknown) => unknown;
  /** Change a forwarded JSON answer. */
  readonly rewriteResponse?: (path: string, body: unknown) => unknown;
}

export async function startTestServer(
  options: TestServerOptions,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    void answer(req, res, options);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function answer(req: IncomingMessage, res: ServerResponse, options: TestServerOptions): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  const path = req.url ?? "/";
  const body: unknown = text === "" ? undefined : JSON.parse(text);
  const own = options.handle?.(path, body);
  if (own === "hang") return;
  if (own !== undefined) {
    res.writeHead(own[0], { "content-type": "application/json" }).end(own[1]);
    return;
  }
  if (options.upstream === undefined) {
    res.writeHead(404).end("{}");
    return;
  }
  const forwarded = options.rewriteRequest && body !== undefined ? options.rewriteRequest(path, body) : body;
  const upstream = await fetch(`${options.upstream}${path}`, {
    method: req.method ?? "GET",
    ...(forwarded === undefined
      ? {}
      : { body: JSON.stringify(forwarded), headers: { "content-type": "application/json" } }),
  });
  let out = await upstream.text();
  const type = upstream.headers.get("content-type") ?? "text/plain";
  if (options.rewriteResponse && type.includes("json")) {
    out = JSON.stringify(options.rewriteResponse(path, JSON.parse(out)));
  }
  res.writeHead(upstream.status, { "content-type": type }).end(out);
}
