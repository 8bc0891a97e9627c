import { cp, mkdtemp, readFile, rm, truncate, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { afterAll, describe, expect, it, vi } from "vitest";
import {
  findTinySize,
  generateTinyModel,
  readCorpus,
  type TinySize,
  writeTinyModel,
} from "../../engine/index.js";
import type { RunningServer } from "../../server/index.js";
import { runCli } from "../run.js";
import { byteSize, registerServe, serverOptions } from "./serve.js";

const work = await mkdtemp(join(tmpdir(), "bringup-serve-"));
afterAll(() => rm(work, { recursive: true, force: true }));
const good = join(work, "good");
await writeTinyModel(good, generateTinyModel(findTinySize("tiny") as TinySize, await readCorpus()));

/** A copy of the good model directory with one thing broken. */
async function broken(name: string, breakIt: (dir: string) => Promise<void>): Promise<string> {
  const dir = join(work, name);
  await cp(good, dir, { recursive: true });
  await breakIt(dir);
  return dir;
}

async function editConfig(dir: string, edit: (config: Record<string, unknown>) => void): Promise<void> {
  const config = JSON.parse(await readFile(join(dir, "config.json"), "utf8"));
  edit(config);
  await writeFile(join(dir, "config.json"), JSON.stringify(config));
}

/** Runs the whole CLI in process, as `bringup <args>`; returns what it wrote to stderr and its exit code. */
async function cli(args: string[]): Promise<{ stderr: string; exitCode: number | undefined }> {
  let stderr = "";
  const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  try {
    await runCli(new Command("bringup"), ["node", "bringup", ...args]);
    return { stderr, exitCode: process.exitCode === undefined ? undefined : Number(process.exitCode) };
  } finally {
    spy.mockRestore();
    process.exitCode = undefined;
  }
}

describe("bringup serve", () => {
  it.each([
    [
      "a missing tokenizer.json",
      "no-tokenizer",
      (d: string) => rm(join(d, "tokenizer.json")),
      "tokenizer.json",
    ],
    [
      "config.json that is not JSON",
      "bad-json",
      (d: string) => writeFile(join(d, "config.json"), "{"),
      "config.json",
    ],
    [
      "a vocab_size the tokenizer exceeds",
      "small-vocab",
      (d: string) =>
        editConfig(d, (c) => {
          c.vocab_size = 100;
        }),
      "tokenizer.json",
    ],
    [
      "a hidden_size the weights contradict",
      "bad-hidden",
      (d: string) =>
        editConfig(d, (c) => {
          c.hidden_size = 32;
        }),
      "config.json",
    ],
    [
      "truncated weights",
      "truncated",
      (d: string) => truncate(join(d, "model.safetensors"), 5000),
      "model.safetensors",
    ],
  ])("fails at start on %s, naming the file", async (_, name, breakIt, file) => {
    const dir = await broken(name, breakIt);
    const { stderr, exitCode } = await cli(["serve", dir, "--port", "0"]);
    expect(exitCode).toBe(2);
    expect(stderr).toMatch(/^bringup: .*\[[A-Z_]+\]\n$/);
    expect(stderr).toContain(name);
    expect(stderr).toContain(file);
  });

  it("refuses --speculative-tokens on a model without an MTP layer, in one line before serving", async () => {
    const { stderr, exitCode } = await cli(["serve", good, "--port", "0", "--speculative-tokens", "2"]);
    expect(exitCode).toBe(2);
    expect(stderr).toMatch(/^bringup: .*no MTP layer to draft with.*\[SPECULATIVE_UNAVAILABLE\]\n$/);
    const flags = { host: "127.0.0.1", port: 0, tiny: "tiny" };
    expect(serverOptions(good, { ...flags, speculativeTokens: 3 }).speculativeTokens).toBe(3);
  });

  it("serves a model directory with vLLM's flags", async () => {
    const program = new Command("bringup").exitOverride();
    let out = "";
    const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
      out += String(chunk);
      return true;
    });
    const seen: { models?: unknown; unauthorized?: number; capacity?: string; overCap?: string } = {};
    registerServe(program, async (server: RunningServer) => {
      const headers = { authorization: "Bearer k" };
      seen.unauthorized = (await fetch(`${server.url}/v1/models`)).status;
      seen.models = await (await fetch(`${server.url}/v1/models`, { headers })).json();
      seen.capacity = /^bringup:kv_cache_token_capacity\{[^}]*\} (\d+)$/m.exec(
        await (await fetch(`${server.url}/metrics`)).text(),
      )?.[1];
      // The fetches hold at most three connections, so with --max-connections 3 at least one of
      // four new sockets is over the cap: closed at once, unanswered (not a 408 after 10 s).
      const sockets = [0, 1, 2, 3].map(() => connect(Number(new URL(server.url).port), "127.0.0.1"));
      seen.overCap = await Promise.race(
        sockets.map(
          (s) =>
            new Promise<string>((done) => {
              let received = "";
              s.on("data", (d) => {
                received += String(d);
              });
              s.on("error", () => undefined);
              s.on("close", () => done(received));
            }),
        ),
      );
      for (const s of sockets) s.destroy();
    });
    try {
      await program.parseAsync(
        [
          "serve",
          good,
          "--port",
          "0",
          "--api-key",
          "k",
          "--served-model-name",
          "lamp",
          "--max-model-len",
          "128",
          "--max-num-seqs",
          "2",
        ].concat(
          ["--kv-cache-memory-bytes", "64KiB", "--block-size", "8", "--threads", "1"],
          ["--max-connections", "3"],
        ),
        { from: "user" },
      );
    } finally {
      spy.mockRestore();
    }
    expect(out).toMatch(/^loading .*good\nserving lamp at http:\/\/127\.0\.0\.1:\d+ /);
    expect(out).toContain("max-model-len 128, max-num-seqs 2");
    expect(seen.unauthorized).toBe(401);
    expect(seen.models).toMatchObject({ data: [{ id: "lamp", max_model_len: 128 }] });
    // 64 KiB at 1 KiB per token (4 layers, 2 KV heads of 16, keys and values in f32) holds 64 tokens.
    expect(seen.capacity).toBe("64");
    expect(seen.overCap).toBe("");
  });

  it("refuses an unknown --kv-layout, naming the layouts", async () => {
    const program = new Command("bringup").exitOverride();
    let stderr = "";
    program.configureOutput({ writeErr: (text) => (stderr += text) });
    registerServe(program, async () => {});
    await expect(
      program.parseAsync(["serve", good, "--port", "0", "--kv-layout", "ring"], { from: "user" }),
    ).rejects.toMatchObject({ exitCode: 1, code: "commander.invalidArgument" });
    expect(stderr).toContain("--kv-layout");
    expect(stderr).toContain("expected window-sized or full");
  });

  it("passes --kv-layout to the server", () => {
    const flags = { host: "127.0.0.1", port: 0, tiny: "tiny" };
    expect(serverOptions(undefined, { ...flags, kvLayout: "full" }).kvLayout).toBe("full");
    expect(serverOptions(undefined, flags).kvLayout).toBeUndefined();
  });

  it("reads KV budgets with units", () => {
    expect(byteSize("1048576")).toBe(1048576);
    expect(byteSize("64KiB")).toBe(65536);
    expect(byteSize("1G")).toBe(1e9);
    expect(byteSize("1.5 MiB")).toBe(1572864);
    expect(() => byteSize("lots")).toThrow(/size in bytes/);
  });
});
