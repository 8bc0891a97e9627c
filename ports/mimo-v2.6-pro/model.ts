/**
 * MiMo-V2.6-Pro on the reference engine: the MiMo-V2-Flash family's model code (shared with
 * MiMo-V2.6-Flash, src/engine/models/mimo.ts) with its routed experts stored in MXFP4 as the Pro
 * model ships them (`mlp.experts.N.*_proj.weight_blocks` / `_scales`); the engine multiplies them
 * as stored, decoding inside its matmul.
 */
import type { PortModel } from "../../src/engine/index.js";
import { mimoArchitecture, mimoRetrievalModel, mimoTinyModel } from "../../src/engine/index.js";

const PORT = "mimo-v2.6-pro";

export const portModel: PortModel = {
  architecture: mimoArchitecture,
  tinyModel: (config, corpus, options) =>
    mimoTinyModel(config, corpus, { ...options, port: PORT, mxfp4Experts: true }),
  retrievalModel: (corpus, options) =>
    mimoRetrievalModel(corpus, { maxPositionEmbeddings: options.maxPositionEmbeddings, port: PORT }),
};
