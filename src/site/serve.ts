import { readFile, stat } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { join, relative, resolve } from "node:path";
import { serve } from "@hono/node-server";
import { serveStatic } from "@hono/node-server/serve-static";
import { Hono } from "hono";
import { BringupError } from "../common/errors.js";

export interface SiteServer {
  url: string;
  close(): Promise<void>;
}

export interface ServeOptions {
  /** 0 picks a free port. */
  port: number;
  host?: string;
}

/**
 * Serves a built site (the output of `buildSite`) as static files on 127.0.0.1 until closed.
 * Unknown paths get the site's own 404 page.
 */
export async function serveSite(dir: string, options: ServeOptions): Promise<SiteServer> {
  const root = resolve(dir);
  const index = await stat(join(root, "index.html")).catch(() => undefined);
  if (!index?.isFile()) {
    throw new BringupError(
      "SITE_NOT_BUILT",
      `${root} holds no built site (no index.html); run \`bringup site build --out ${dir}\` first.`,
      { subject: root },
    );
  }
  const notFound = await readFile(join(root, "404.html"), "utf8").catch(() => "Not found");
  const app = new Hono();
  // serveStatic takes a root relative to the working directory.
  app.use("*", serveStatic({ root: relative(process.cwd(), root) || "." }));
  app.notFound((c) => c.html(notFound, 404));

  const host = options.host ?? "127.0.0.1";
  return new Promise((resolvePromise, reject) => {
    const server = serve({ fetch: app.fetch, port: options.port, hostname: host }, (info: AddressInfo) => {
      resolvePromise({
        url: `http://${host}:${info.port}/`,
        close: () =>
          new Promise<void>((done, fail) => {
            server.close((error) => (error ? fail(error) : done()));
          }),
      });
    });
    server.once("error", (error: NodeJS.ErrnoException) => {
      reject(
        new BringupError(
          "SITE_SERVE_FAILED",
          `could not listen on ${host}:${options.port} (${error.code ?? error.message}); pick another --port.`,
          { subject: `${host}:${options.port}`, cause: error },
        ),
      );
    });
  });
}
