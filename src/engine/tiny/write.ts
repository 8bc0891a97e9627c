import { join } from "node:path";
import { writeDirectoryAtomic, writeFileAtomic } from "../../common/atomic-write.js";
import { BringupError } from "../../common/errors.js";
import { writeSafetensors } from "../../formats/index.js";
import type { TinyModelFiles } from "./files.js";

/**
 * Writes a tiny model directory (config.json, generation_config.json, tokenizer.json,
 * tokenizer_config.json, model.safetensors) at `dir`, atomically: it appears whole or not at all.
 * Refuses tensors a load re-laid for the kernels (MXFP4 in halves order, FP8 in lanes order): their
 * bytes are not the checkpoint's order, and written as they are they would load as other weights.
 */
export async function writeTinyModel(dir: string, files: TinyModelFiles): Promise<void> {
  for (const [name, t] of files.tensors) {
    const order = t.mxfp4Order ?? t.fp8Order;
    if (order !== undefined)
      throw new BringupError(
        "TINY_TENSOR_RELAID",
        `tensor ${name} is in the kernels' ${order} order, as a load re-lays it, not the checkpoint's; this is a bug in bringup: tiny models are written from the tensors their generator made, not ones read back from a loaded model.`,
        { subject: name },
      );
  }
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
