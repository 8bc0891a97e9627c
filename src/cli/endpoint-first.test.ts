import { once } from "node:events";
import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT_USAGE } from "./run.js";
import { runWholeCli } from "./tests/run-whole-cli.js";

/** A port nothing listens on (taken, then released), and a server that accepts and never answers. */
let deadUrl: string;
let silent: Server;
let silentUrl: string;

beforeAll(async () => {
  const probe = createServer().listen(0, "127.0.0.1");
  await once(probe, "listening");
  deadUrl = `http://127.0.0.1:${(probe.address() as { port: number }).port}`;
  probe.close();
  await once(probe, "close");
  silent = createServer(() => undefined).listen(0, "127.0.0.1");
  await once(silent, "listening");
  silentUrl = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
});

afterAll(() => {
  silent.close();
});

/** The one line a command stops with: the flag, the URL and the code, nothing before it. */
function oneLine(code: string): RegExp {
  return new RegExp(`^bringup: --endpoint http://127\\.0\\.0\\.1:\\d+: [^\\n]* \\[${code}\\]\\n$`);
}

describe("a command taking --endpoint checks it before any work", () => {
  it("stops up, gate and bench with one line and the same exit code on a dead endpoint", async () => {
    const runs = [
      await runWholeCli(["up", "mimo-v2.6-flash", "--endpoint", deadUrl, "--no-site"]),
      await runWholeCli(["gate", "mimo-v2.6-flash", "--endpoint", deadUrl, "--no-record"]),
      await runWholeCli(["bench", "run", "--endpoint", deadUrl, "--num-prompts", "1", "--no-progress"]),
    ];
    for (const run of runs) {
      expect(run.stderr).toMatch(oneLine("ENDPOINT_UNREACHABLE"));
      expect(run.stdout).toBe("");
      expect(run.exitCode).toBe(EXIT_USAGE);
    }
  });

  it("gives up on an endpoint that accepts and never answers, naming the wait", async () => {
    const run = await runWholeCli(["gate", "mimo-v2.6-flash", "--endpoint", silentUrl, "--no-record"]);
    expect(run.stderr).toMatch(oneLine("ENDPOINT_TIMEOUT"));
    expect(run.stderr).toContain("did not answer within 4 s");
    expect(run.exitCode).toBe(EXIT_USAGE);
  });

  it("refuses gates that need a server without --endpoint as a usage mistake, like bench", async () => {
    const gate = await runWholeCli(["gate", "mimo-v2.6-flash", "--no-record"]);
    expect(gate.stderr).toMatch(
      /^bringup: the [^\n]* gates of mimo-v2.6-flash run against a server: pass --endpoint URL[^\n]*\[GATE_NEEDS_ENDPOINT\]\n$/,
    );
    expect(gate.stdout).toBe("");
    const bench = await runWholeCli(["bench", "run"]);
    expect([gate.exitCode, bench.exitCode]).toEqual([EXIT_USAGE, EXIT_USAGE]);
  });
});
