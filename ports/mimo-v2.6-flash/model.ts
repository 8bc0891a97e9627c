/**
 * MiMo-V2.6-Flash on the reference engine: the MiMo-V2-Flash family's model code
 * (src/engine/models/mimo.ts, shared with MiMo-V2.6-Pro) with its tiny reference models.
 */
import type { PortModel } from "../../src/engine/index.js";
import { mimoArchitecture, mimoRetrievalModel, mimoTinyModel } from "../../src/engine/index.js";

export {
  mimoArchitecture,
  mimoRetrievalModel,
  mimoTinyModel,
  parseMimoConfig,
} from "../../src/engine/index.js";

const PORT = "mimo-v2.6-flash";

export const portModel: PortModel = {
  architecture: mimoArchitecture,
  tinyModel: (config, corpus, options) => mimoTinyModel(config, corpus, { ...options, port: PORT }),
  retrievalModel: (corpus, options) =>
    mimoRetrievalModel(corpus, { maxPositionEmbeddings: options.maxPositionEmbeddings, port: PORT }),
};
