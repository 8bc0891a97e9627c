import { Command } from "commander";
import { vi } from "vitest";
import { fileSystemError } from "../../common/fs-errors.js";

export interface CommandRun {
  stdout: string;
  stderr: string;
  exitCode: unknown;
  /** What the command threw, when the caller asked to capture it; otherwise a throw propagates. */
  thrown: unknown;
}

/**
 * Runs CLI commands in this process with the given command groups registered, capturing what
 * they print and the exit code they set (test helper shared by the command tests).
 */
export async function runInProcess(
  register: ReadonlyArray<(program: Command) => void>,
  args: readonly string[],
  options: { captureThrown?: boolean } = {},
): Promise<CommandRun> {
  const program = new Command("bringup").option("--root <dir>").exitOverride();
  for (const add of register) add(program);
  const stdout: string[] = [];
  const stderr: string[] = [];
  const out = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => stdout.push(String(chunk)) > 0);
  const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => stderr.push(String(chunk)) > 0);
  process.exitCode = undefined;
  let thrown: unknown;
  try {
    await program.parseAsync(["node", "bringup", ...args]);
  } catch (caught) {
    // As runCli does: a filesystem error comes out as a BringupError naming its path.
    const error = fileSystemError(caught) ?? caught;
    if (!options.captureThrown) throw error;
    thrown = error;
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  const exitCode = process.exitCode;
  process.exitCode = undefined;
  return { stdout: stdout.join(""), stderr: stderr.join(""), exitCode, thrown };
}
