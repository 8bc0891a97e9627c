import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { afterAll, describe, expect, it, vi } from "vitest";
import { portReference } from "../../../test/helpers/port-reference.js";
import { writeTinyModel } from "../../engine/index.js";
import { runCli } from "../run.js";

const work = await mkdtemp(join(tmpdir(), "bringup-serve-model-code-"));
afterAll(() => rm(work, { recursive: true, force: true }));

const port = "glm-5.3-flash";
const files = (await portReference(port)).referenceFiles();

/** The port's tiny model directory with its config.json edited by `edit`. */
async function directory(name: string, edit: (c: Record<string, unknown>) => void): Promise<string> {
  const dir = join(work, name);
  await writeTinyModel(dir, files);
  const c = JSON.parse(await readFile(join(dir, "config.json"), "utf8"));
  edit(c);
  await writeFile(join(dir, "config.json"), JSON.stringify(c));
  return dir;
}

async function serve(dir: string): Promise<{ stderr: string; stdout: string; exitCode: number | undefined }> {
  let stderr = "";
  let stdout = "";
  const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  const out = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  try {
    await runCli(new Command("bringup"), ["node", "bringup", "serve", dir, "--port", "0"]);
    return {
      stderr,
      stdout,
      exitCode: process.exitCode === undefined ? undefined : Number(process.exitCode),
    };
  } finally {
    spy.mockRestore();
    out.mockRestore();
    process.exitCode = undefined;
  }
}

describe("bringup serve refuses a port's model directory whose config and weights disagree", () => {
  it.each([
    [
      "a layer kind the model code does not know",
      "unknown-kind",
      (c: Record<string, unknown>) => {
        c.linear_attn_config = { ...(c.linear_attn_config as object), mamba_layers: [2] };
      },
      /linear_attn_config.*\[MODEL_CONFIG_INVALID\]/,
    ],
    [
      "a KDA state shape the weights contradict",
      "state-shape",
      (c: Record<string, unknown>) => {
        c.linear_attn_config = { ...(c.linear_attn_config as object), head_dim: 16 };
      },
      /model\.layers\.0\.self_attn\.q_proj\.weight.*\[MODEL_WEIGHTS_MISMATCH\]/,
    ],
    [
      "a checkpoint with a layer the config does not have",
      "extra-layer",
      (c: Record<string, unknown>) => {
        c.num_hidden_layers = 7;
        c.linear_attn_config = { ...(c.linear_attn_config as object), full_attn_layers: [4] };
      },
      /model\.layers\.7\..*\[MODEL_WEIGHTS_MISMATCH\]/,
    ],
  ])("%s: names it and serves nothing", async (_, name, edit, message) => {
    const { stderr, stdout, exitCode } = await serve(await directory(name, edit));
    expect(exitCode).toBe(2);
    expect(stderr).toMatch(message);
    expect(stdout).toMatch(/^loading /);
    expect(stdout).not.toContain("serving");
  });
});
