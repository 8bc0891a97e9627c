import { type Command, CommanderError } from "commander";
import { toolVersion } from "../bench/index.js";
import { ERROR_CATEGORIES, exitCode } from "../common/error-catalogue.js";
import { isBringupError } from "../common/errors.js";
import { fileSystemError } from "../common/fs-errors.js";
import { registerCommands } from "./commands/index.js";

/**
 * Exit codes: 0 done; 1 the command ran and a check failed (a gate, the linter, a verification);
 * 2 a usage error or the command could not run (the message says why and what to do); 130 stopped
 * by Ctrl-C. A failed command's exit code comes from its error's category in the catalogue.
 */
export const EXIT_CHECK_FAILED = ERROR_CATEGORIES.check.exit;
export const EXIT_USAGE = ERROR_CATEGORIES.usage.exit;

/** Every command and subcommand throws instead of exiting, so runCli decides the exit code. */
function throwInsteadOfExit(command: Command): void {
  command.exitOverride();
  for (const sub of command.commands) throwInsteadOfExit(sub);
}

/** Registers every command, parses argv and turns errors into a message and an exit code. */
export async function runCli(program: Command, argv: string[]): Promise<void> {
  registerCommands(program);
  program.version(toolVersion().replace(/^bringup /, ""), "-V, --version", "print the bringup version");
  program.showHelpAfterError();
  throwInsteadOfExit(program);
  try {
    await program.parseAsync(argv);
  } catch (error) {
    // Commander has printed its message (or the help or version it was asked for).
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode === 0 ? 0 : EXIT_USAGE;
      return;
    }
    const known = isBringupError(error) ? error : fileSystemError(error);
    if (known !== undefined) {
      process.stderr.write(`bringup: ${known.message} [${known.code}]\n`);
      process.exitCode = exitCode(known.code);
      return;
    }
    throw error;
  }
}
