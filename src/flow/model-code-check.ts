import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Diagnostic } from "../catalog/index.js";
import type { PortModel } from "../engine/index.js";

/**
 * Ports whose folder holds model code (model.ts) that `models` (the registry every command uses)
 * does not list: such code would never run, since no command imports it.
 */
export async function unregisteredModelCode(
  root: string,
  models: ReadonlyMap<string, PortModel>,
  portId?: string,
): Promise<Diagnostic[]> {
  const ports = join(root, "ports");
  const ids = portId !== undefined ? [portId] : await readdir(ports).catch(() => [] as string[]);
  const found: Diagnostic[] = [];
  for (const id of ids) {
    const file = join(ports, id, "model.ts");
    const present = await stat(file).then(
      (s) => s.isFile(),
      () => false,
    );
    if (present && !models.has(id)) {
      found.push({
        file: `ports/${id}/model.ts`,
        message: "the port's model code is not registered, so no command can run it",
        expected: `an entry for "${id}" in PORT_MODELS (src/flow/port-models.ts) importing its portModel`,
      });
    }
  }
  return found;
}
