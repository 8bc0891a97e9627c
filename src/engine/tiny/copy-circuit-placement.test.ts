import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { f32Param } from "../blocks/parameters.js";
import type { HostTensor } from "../loader/host-tensor.js";
import { placeCopyCircuit, putRoles } from "./copy-circuit-placement.js";
import { readCorpus } from "./corpus.js";
import { tinyFilesToModel } from "./generate.js";
import { generateRetrievalModel } from "./retrieval.js";

const corpus = await readCorpus();
// The llama retrieval model: the circuit with these sizes and margins placed into a llama shape.
const handBuilt = generateRetrievalModel(corpus, { maxPositionEmbeddings: 512 });
const CIRCUIT = { m: 16, u: 64, ngram: 6, matchLogit: 30, prevMargin: 30, outputLogit: 40 };

describe("placeCopyCircuit", () => {
  it("builds the llama retrieval model with the bytes its hand-written construction had", () => {
    // sha256 of the tensors of generateRetrievalModel at 107851f, written out by hand there.
    const hash = createHash("sha256");
    for (const name of [...handBuilt.tensors.keys()].sort()) {
      const t = handBuilt.tensors.get(name) as HostTensor;
      hash.update(`${name} ${t.dtype} ${t.shape.join(",")}\n`);
      hash.update(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    }
    expect(hash.digest("hex")).toBe("cb4658ac308088c3a03e8a825a563cbcd3147caee85824ed03c986b267772e2e");
  });

  it("refuses a model whose hidden size is not the circuit's, saying which it must be", async () => {
    const model = await tinyFilesToModel("retrieval", handBuilt);
    expect(() => placeCopyCircuit(handBuilt, model, { ...CIRCUIT, m: 8 })).toThrow(
      expect.objectContaining({
        code: "RETRIEVAL_CONFIG_INVALID",
        message: expect.stringMatching(/hidden_size must be 184 .*, got 240/),
      }),
    );
  });

  it("refuses attention layers without the biases the previous-token heads are made of", async () => {
    const tensors = new Map([...handBuilt.tensors].filter(([name]) => !name.endsWith("_proj.bias")));
    const noBias = { ...handBuilt, config: { ...handBuilt.config, attention_bias: false }, tensors };
    const model = await tinyFilesToModel("nb", noBias);
    expect(() => placeCopyCircuit(noBias, model, CIRCUIT)).toThrow(
      expect.objectContaining({
        code: "RETRIEVAL_CONFIG_INVALID",
        message: expect.stringMatching(/attention_bias/),
      }),
    );
  });
});

describe("putRoles", () => {
  it("writes each role into its declared name and refuses a role the layer does not declare", () => {
    const written: string[] = [];
    const put = (name: string) => void written.push(name);
    const parameters = { norm: f32Param("blk.norm.weight", [2], "ones"), bias: undefined };
    putRoles(put, parameters, { norm: new Float32Array(2) });
    expect(written).toEqual(["blk.norm.weight"]);
    expect(() => putRoles(put, parameters, { bias: new Float32Array(2) })).toThrow(
      "the retrieval circuit writes the bias parameter, which this layer does not declare",
    );
  });
});
