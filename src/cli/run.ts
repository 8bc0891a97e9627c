import type { Command } from "commander";
import { isBringupError } from "../common/errors.js";
import { registerCommands } from "./commands/index.js";

/** Registers every command, parses argv and turns library errors into a message and an exit code. */
export async function runCli(program: Command, argv: string[]): Promise<void> {
  registerCommands(program);
  program.showHelpAfterError();
  try {
    await program.parseAsync(argv);
  } catch (error) {
    if (isBringupError(error)) {
      process.stderr.write(`bringup: ${error.message} [${error.code}]\n`);
      process.exitCode = 2;
      return;
    }
    throw error;
  }
}
