import { copyFile, readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { BringupError, isBringupError } from "../common/errors.js";
import { MAX_CONFIG_BYTES, readBoundedText } from "./bounded-file.js";
import { INDEX_FILE } from "./checkpoint.js";

/**
 * Copies the non-weight files beside a checkpoint's weights (tokenizer, generation config, ...) into
 * `dir`, letting `editConfig` change config.json on the way (the quantization_config engines read).
 * Without a config.json to carry over, `fallbackConfig` (when given) is written as one.
 */
export async function copyCompanions(
  source: string,
  dir: string,
  editConfig?: (config: Record<string, unknown>) => void,
  fallbackConfig?: Record<string, unknown>,
): Promise<string[]> {
  const copied: string[] = [];
  const names = (await stat(source)).isDirectory() ? await readdir(source) : [];
  if (!names.includes("config.json") && fallbackConfig !== undefined) {
    await writeFile(join(dir, "config.json"), `${JSON.stringify(fallbackConfig, null, 2)}\n`);
  }
  for (const name of names) {
    const from = join(source, name);
    if (name.endsWith(".safetensors") || name === INDEX_FILE || !(await stat(from)).isFile()) continue;
    if (name === "config.json" && editConfig !== undefined) {
      let config: Record<string, unknown>;
      try {
        config = JSON.parse(await readBoundedText(from, MAX_CONFIG_BYTES)) as Record<string, unknown>;
      } catch (error) {
        if (isBringupError(error)) throw error;
        throw new BringupError(
          "BAD_CONFIG",
          `${from}: not valid JSON (${(error as Error).message}); fix it before converting.`,
          {
            subject: from,
          },
        );
      }
      editConfig(config);
      await writeFile(join(dir, name), `${JSON.stringify(config, null, 2)}\n`);
    } else {
      await copyFile(from, join(dir, name));
    }
    copied.push(name);
  }
  return copied;
}
