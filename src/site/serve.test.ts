import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isBringupError } from "../common/errors.js";
import { serveSite } from "./serve.js";

describe("serveSite", () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "bringup-serve-"));
    await writeFile(join(dir, "index.html"), "<h1>index</h1>");
    await writeFile(join(dir, "404.html"), "<h1>missing</h1>");
    await writeFile(join(dir, "page.html"), "<p>page</p>");
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("serves the built files on 127.0.0.1 and the site's 404 page for unknown paths", async () => {
    const server = await serveSite(dir, { port: 0 });
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      const index = await fetch(server.url);
      expect(index.status).toBe(200);
      expect(await index.text()).toBe("<h1>index</h1>");
      expect(await (await fetch(new URL("page.html", server.url))).text()).toBe("<p>page</p>");
      const missing = await fetch(new URL("nope.html", server.url));
      expect(missing.status).toBe(404);
      expect(await missing.text()).toBe("<h1>missing</h1>");
    } finally {
      await server.close();
    }
  });

  it("says to build first when the directory holds no site", async () => {
    const empty = await mkdtemp(join(tmpdir(), "bringup-serve-empty-"));
    const error = await serveSite(empty, { port: 0 }).catch((e: unknown) => e);
    expect(isBringupError(error) && error.code).toBe("SITE_NOT_BUILT");
    await rm(empty, { recursive: true });
  });

  it("reports a port already in use", async () => {
    const blocker = createServer();
    await new Promise<void>((done) => blocker.listen(0, "127.0.0.1", done));
    const port = (blocker.address() as { port: number }).port;
    try {
      const error = await serveSite(dir, { port }).catch((e: unknown) => e);
      expect(isBringupError(error) && error.code).toBe("SITE_SERVE_FAILED");
    } finally {
      await new Promise((done) => blocker.close(done));
    }
  });
});
