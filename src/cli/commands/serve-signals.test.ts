import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// `bringup serve` as a real process: SIGTERM drains and exits 0, a request still running past the
// drain time gets a 503 (not a truncated 200), and when the npm/npx launcher that started it is
// killed, the server stops too.
const MAIN = fileURLToPath(new URL("../main.ts", import.meta.url));
const SERVE = ["--import", "tsx", MAIN, "serve", "--tiny", "tiny", "--port", "0", "--threads", "1"];

/** Resolves with the server's URL once it prints it. */
function urlOf(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (d) => {
      out += String(d);
      const match = /at (http:\/\/\S+) /.exec(out);
      if (match) resolve(match[1] as string);
    });
    child.once("exit", (code) => reject(new Error(`exited (${code}) before serving: ${out}`)));
  });
}

const exitOf = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));

describe("bringup serve as a process", () => {
  it("on SIGTERM drains, answers what is left with 503 and exits 0", async () => {
    // The small size decodes 8,000 tokens for far longer than the one second of drain.
    const args = ["--import", "tsx", MAIN, "serve", "--tiny", "small", "--port", "0", "--threads", "1"];
    const server = spawn(process.execPath, [...args, "--drain-timeout", "1"], { stdio: "pipe" });
    const url = await urlOf(server);
    const exited = exitOf(server);
    const long = fetch(`${url}/v1/completions`, {
      method: "POST",
      body: JSON.stringify({ prompt: "Orla", max_tokens: 8000, temperature: 0, ignore_eos: true }),
    });
    // Signal once the request is running, not after a guessed delay.
    const running = async () =>
      /^vllm:num_requests_running\{[^}]*\} 1$/m.test(await (await fetch(`${url}/metrics`)).text());
    while (!(await running())) await new Promise((r) => setTimeout(r, 20));
    server.kill("SIGTERM");
    const res = await long;
    expect(res.status).toBe(503);
    expect(await exited).toBe(0);
  });

  it("stops when the launcher that started it is killed", async () => {
    // A launcher like npx: runs the server as its child and does not pass SIGTERM on.
    const launcher = spawn(
      process.execPath,
      [
        "-e",
        `const c = require("node:child_process").spawn(process.execPath, ${JSON.stringify(SERVE)}, { stdio: "inherit" });
         console.log("server pid " + c.pid);
         process.on("SIGTERM", () => process.exit(0));
         setInterval(() => {}, 1e6);`,
      ],
      { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, npm_command: "exec" } },
    );
    let pid = 0;
    launcher.stdout?.on("data", (d) => {
      pid = Number(/server pid (\d+)/.exec(String(d))?.[1] ?? pid);
    });
    const url = await urlOf(launcher);
    launcher.kill("SIGTERM");
    let stopped = false;
    for (let i = 0; i < 300 && !stopped; i++) {
      await new Promise((r) => setTimeout(r, 100));
      stopped = await fetch(`${url}/health`).then(
        () => false,
        () => true,
      );
    }
    if (!stopped && pid > 0) process.kill(pid, "SIGKILL");
    expect(stopped).toBe(true);
  });
});
