import type { Command } from "commander";
import { registerBench } from "./bench.js";
import { registerDevice } from "./device.js";
import { registerGate } from "./gate.js";
import { registerMakeTiny } from "./make-tiny.js";
import { registerPorts } from "./ports.js";
import { registerRecipe } from "./recipe.js";
import { registerRecords } from "./records.js";
import { registerServe } from "./serve.js";
import { registerSite } from "./site.js";
import { registerUp } from "./up.js";
import { registerWeights } from "./weights.js";
import { registerWeightsPack } from "./weights-pack.js";

/** Each command module adds its subcommands here; the order is the order of `bringup --help`. */
export function registerCommands(program: Command): void {
  registerUp(program);
  registerPorts(program);
  registerRecords(program);
  registerSite(program);
  registerWeights(program);
  registerMakeTiny(program);
  registerWeightsPack(program);
  registerRecipe(program);
  registerServe(program);
  registerGate(program);
  registerDevice(program);
  registerBench(program);
}
