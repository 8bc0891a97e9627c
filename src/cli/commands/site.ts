import { dirname, join, resolve } from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import { brokenPortError, brokenPortsNotice, loadCatalog } from "../../catalog/index.js";
import { checkWritableDirectory } from "../../common/fs-errors.js";
import { buildSite, serveSite } from "../../site/index.js";
import { projectRoot } from "../root.js";
import { untilSignalled } from "../signals.js";

/** Where `site build` writes and `site serve` reads by default (gitignored). */
const DEFAULT_OUT = "site-out";

function tcpPort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535)
    throw new InvalidArgumentError("expected a port number from 0 to 65535.");
  return port;
}

function outDir(command: Command, out: string | undefined): string {
  return out === undefined ? join(projectRoot(command), DEFAULT_OUT) : resolve(out);
}

export function registerSite(program: Command): void {
  const site = program
    .command("site")
    .description("the documentation site generated from the catalog and the records");

  site
    .command("build")
    .description("build the static site: the Ports index, a page per port, common ground and availability")
    .option(
      "--out <dir>",
      `output directory, replaced only if an earlier build wrote it (default: ${DEFAULT_OUT}/ in the project root)`,
    )
    .option("--local", "a preview that also shows the records of local runs not yet published, marked local")
    .action(async (options: { out?: string; local?: boolean }, command: Command) => {
      const out = outDir(command, options.out);
      await checkWritableDirectory(dirname(out));
      const catalog = await loadCatalog(projectRoot(command), { local: options.local === true });
      const [firstBroken] = catalog.broken ?? [];
      if (catalog.ports.length === 0 && firstBroken !== undefined) throw brokenPortError(firstBroken);
      const notice = brokenPortsNotice(catalog);
      if (notice !== undefined) process.stderr.write(`${notice}\n`);
      const started = performance.now();
      const stop = new AbortController();
      void untilSignalled().then(() => stop.abort());
      const built = await buildSite(catalog, out, { signal: stop.signal });
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      process.stdout.write(
        `built ${built.pages.length} pages (${catalog.ports.length} ports) into ${built.outDir} in ${seconds} s\n`,
      );
    });

  site
    .command("serve")
    .description("preview the built site on 127.0.0.1 until Ctrl-C")
    .option("--port <n>", "port to listen on (0 picks a free one)", tcpPort, 4173)
    .option("--dir <dir>", `the built site (default: ${DEFAULT_OUT}/ in the project root)`)
    .action(async (options: { port: number; dir?: string }, command: Command) => {
      const server = await serveSite(outDir(command, options.dir), { port: options.port });
      process.stdout.write(`serving ${server.url} (Ctrl-C stops)\n`);
      await untilSignalled();
      await server.close();
    });
}
