import { portModel as glm53Flash } from "../../ports/glm-5.3-flash/model.js";
import { portModel as glm5Mxfp4 } from "../../ports/glm-5-mxfp4/model.js";
import { portModel as kimiK27Code } from "../../ports/kimi-k2.7-code/model.js";
import { portModel as mimoV26Flash } from "../../ports/mimo-v2.6-flash/model.js";
import { portModel as mimoV26Pro } from "../../ports/mimo-v2.6-pro/model.js";
import { portModel as minimaxM3 } from "../../ports/minimax-m3/model.js";
import type { Architecture, PortModel } from "../engine/index.js";

/** The port `bringup up` brings up when none is named: the first one with model code. */
export const DEFAULT_PORT = "mimo-v2.6-flash";

/**
 * Each port's model code (ports/<id>/model.ts, its `portModel` export) by port id. A port joins
 * with one import and one entry here; static imports keep the build and the package self-contained.
 */
export const PORT_MODELS: ReadonlyMap<string, PortModel> = new Map([
  ["mimo-v2.6-flash", mimoV26Flash],
  ["glm-5.3-flash", glm53Flash],
  ["minimax-m3", minimaxM3],
  ["mimo-v2.6-pro", mimoV26Pro],
  ["glm-5-mxfp4", glm5Mxfp4],
  ["kimi-k2.7-code", kimiK27Code],
]);

/** Every port's architecture: what `bringup serve` and the loaders read model directories with. */
export const PORT_ARCHITECTURES: readonly Architecture[] = [...PORT_MODELS.values()].map(
  (m) => m.architecture,
);

/** Where an engine thread imports PORT_ARCHITECTURES from (code cannot be sent to a thread). */
export const PORT_ARCHITECTURES_MODULE = {
  module: import.meta.url,
  exportName: "PORT_ARCHITECTURES",
} as const;
