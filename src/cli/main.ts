#!/usr/bin/env node
import { Command } from "commander";
import { runCli } from "./run.js";

const program = new Command("bringup")
  .description("Bring new LLM architectures up on inference hardware: ports, gates, benchmarks, provenance.")
  .option("--root <dir>", "project root holding ports/ (default: the bringup checkout)");

await runCli(program, process.argv);
