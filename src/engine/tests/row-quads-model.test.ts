import { describe, expect, it } from "vitest";
import { Engine } from "../engine.js";
import type { HostTensor } from "../loader/host-tensor.js";
import type { LoadedModel } from "../model/loaded-model.js";
import { scoredToken } from "../request.js";
import type { TinyModelFiles } from "../tiny/files.js";
import { tinyFilesToModel } from "../tiny/generate.js";
import { collect } from "./engines.js";
import { GOLDEN_TEXT } from "./golden-logprobs.js";
import { goldenFamilyModels, goldenPortModels } from "./golden-models.js";

/**
 * The loader lays f32 matrices out in row quads where it copies them into the kernels' memory
 * (tensor/row-quads.ts); tensors already in a SharedArrayBuffer outside it are read where they
 * lie, row-major. The same files both ways must give the same bits on the SIMD kernels.
 */
function outsideTheArena(files: TinyModelFiles): TinyModelFiles {
  const tensors = new Map<string, HostTensor>();
  for (const [name, t] of files.tensors) {
    const ctor = t.data.constructor as new (b: SharedArrayBuffer) => HostTensor["data"];
    const data = new ctor(new SharedArrayBuffer(t.data.byteLength));
    data.set(t.data as never);
    tensors.set(name, { ...t, data });
  }
  return { ...files, tensors };
}

/** A tiny llama whose LM head is its embedding table (`tie_word_embeddings`). */
function tied(files: TinyModelFiles): TinyModelFiles {
  const tensors = new Map(files.tensors);
  tensors.delete("lm_head.weight");
  return { ...files, config: { ...files.config, tie_word_embeddings: true }, tensors };
}

async function logprobs(model: LoadedModel): Promise<number[][]> {
  const engine = new Engine(model, { threads: 2, maxNumSeqs: 1 });
  try {
    const prompt = model.tokenizer.encode(GOLDEN_TEXT).slice(0, 24);
    const outs = await collect(
      engine.submit({
        promptTokenIds: prompt,
        maxTokens: 4,
        logprobs: 0,
        promptLogprobs: 1,
        sampling: { temperature: 0 },
        ignoreEos: true,
      }),
    );
    return outs.flatMap((o) => [
      ...(o.promptLogprobs ?? []).flatMap((p) => (p === null ? [] : [[p.tokenId, p.logprob]])),
      ...(o.token ? [[o.token.tokenId, scoredToken(o.token).logprob]] : []),
    ]);
  } finally {
    await engine.close();
  }
}

const family = await goldenFamilyModels();
const ports = await goldenPortModels();
const cases: [string, TinyModelFiles][] = [
  ["llama with a tied LM head", tied(family.llama as TinyModelFiles)],
  ["mixtral", family.mixtral as TinyModelFiles],
  // Its MTP layer drafts through the main model's embedding and LM head.
  ["deepseek-v4.1-flash", ports["deepseek-v4.1-flash"] as TinyModelFiles],
];

describe("f32 matrices in row quads", () => {
  it.each(cases)("%s: the same logprobs and greedy tokens as read row-major", async (_, files) => {
    const quads = await tinyFilesToModel("quads", files);
    const rowMajor = await tinyFilesToModel("row-major", outsideTheArena(files));
    expect(quads.model.lmHead.layout).toBe("row-quads");
    expect(rowMajor.model.lmHead.layout).toBeUndefined();
    expect(await logprobs(quads)).toEqual(await logprobs(rowMajor));
  });

  it("reads a tied LM head as the embedding table itself", async () => {
    const model = await tinyFilesToModel("tied", cases[0]?.[1] as TinyModelFiles);
    expect(model.model.lmHead).toBe(model.model.embedding);
  });
});
