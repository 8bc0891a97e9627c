// Runs in a child process of `buildSite`: one VitePress build of a generated source directory.
// A process of its own can be stopped (Ctrl-C, SIGTERM) mid-build, and its output is a pipe, so
// VitePress draws no spinner whatever size the user's terminal reports.
import { build } from "vitepress";
import { scriptSafe } from "./markdown.js";

const [srcDir, outDir] = process.argv.slice(2);

try {
  await build(srcDir, {
    outDir,
    onAfterConfigResolve: (config) => {
      config.transformPageData = (pageData) => scriptSafe(pageData);
    },
  });
  process.exitCode = 0;
} catch (error) {
  process.send?.({ error: error instanceof Error ? error.message : String(error) });
  process.exitCode = 1;
}
