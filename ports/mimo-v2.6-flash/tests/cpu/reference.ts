import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parse } from "yaml";
import { PortManifest } from "../../../../src/catalog/index.js";

/** The port's tiny reference config as its manifest states it (validated by the manifest schema). */
export async function referenceConfig(): Promise<Record<string, unknown>> {
  const text = await readFile(join(import.meta.dirname, "..", "..", "port.yaml"), "utf8");
  const config = PortManifest.parse(parse(text)).reference?.config;
  if (config === undefined) throw new Error("ports/mimo-v2.6-flash/port.yaml has no reference config");
  return config;
}
