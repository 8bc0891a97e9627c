import { join } from "node:path";
import { writeDirectoryAtomic, writeFileAtomic } from "../../common/atomic-write.js";
import { writeSafetensors } from "../../formats/index.js";
import type { TinyModelFiles } from "./files.js";

/**
 * Writes a tiny model directory (config.json, generation_config.json, tokenizer.json,
 * tokenizer_config.json, model.safetensors) at `dir`, atomically: it appears whole or not at all.
 */
export async function writeTinyModel(dir: string, files: TinyModelFiles): Promise<void> {
  await writeDirectoryAtomic(dir, async (tmp) => {
    const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
    await writeFileAtomic(join(tmp, "config.json"), json(files.config));
    await writeFileAtomic(join(tmp, "generation_config.json"), json(files.generationConfig));
    await writeFileAtomic(join(tmp, "tokenizer.json"), json(files.tokenizerJson));
    await writeFileAtomic(join(tmp, "tokenizer_config.json"), json(files.tokenizerConfig));
    const tensors = [...files.tensors.entries()].map(([name, t]) => ({
      name,
      dtype: t.dtype,
      shape: [...t.shape],
      data: new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength),
    }));
    await writeSafetensors(join(tmp, "model.safetensors"), tensors, { format: "pt" });
  });
}
