import type { Command } from "commander";

/** Each command module adds its subcommands here; the order is the order of `bringup --help`. */
export function registerCommands(program: Command): void {
  void program;
}
