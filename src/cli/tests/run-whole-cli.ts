import { Command } from "commander";
import { vi } from "vitest";
import { runCli } from "../run.js";

/** Runs the whole CLI as main.ts does, capturing output and the exit code it sets (test helper). */
export async function runWholeCli(
  args: string[],
): Promise<{ stdout: string; stderr: string; exitCode: unknown }> {
  const program = new Command("bringup").option("--root <dir>");
  const stdout: string[] = [];
  const stderr: string[] = [];
  const out = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => stdout.push(String(chunk)) > 0);
  const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => stderr.push(String(chunk)) > 0);
  process.exitCode = undefined;
  try {
    await runCli(program, ["node", "bringup", ...args]);
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  const exitCode = process.exitCode;
  process.exitCode = undefined;
  return { stdout: stdout.join(""), stderr: stderr.join(""), exitCode };
}
