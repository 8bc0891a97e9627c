import { readFile } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { BringupError } from "../../common/errors.js";
import {
  HALVES_BLOCKS_SUFFIX,
  isPackedDirectory,
  MXFP4_HALVES,
  MXFP4_LAYOUT_KEY,
  openCheckpoint,
  STORED_DTYPES,
} from "../../formats/index.js";
import type { LoadedModel } from "../model/loaded-model.js";
import { findArchitecture } from "../models/registry.js";
import { TextTokenizer } from "../tokenizer/tokenizer.js";
import { buildModel } from "./build-model.js";
import {
  type HostTensor,
  type HostWeights,
  parameterCount,
  placedHostTensor,
  sharedHostArray,
} from "./host-tensor.js";
import { readPackedWeights } from "./packed-weights.js";

const ENGINE_DTYPES = new Set<string>(STORED_DTYPES);

/**
 * Loads an HF-style model directory: config.json, tokenizer.json (+ tokenizer_config.json,
 * generation_config.json when present) and safetensors weights (one file or an indexed set of
 * shards) or a packed directory (`bringup weights pack`, read straight into the kernels' memory),
 * built by the family its config.json names (`architectures`, then `model_type`; see
 * models/registry.ts). Every failure names the file, field or tensor at fault.
 */
export async function loadModel(
  directory: string,
  options: { readonly name?: string } = {},
): Promise<LoadedModel> {
  const dir = resolve(directory);
  const configPath = join(dir, "config.json");
  const configJson = await readJson(configPath, true);
  const architecture = await findArchitecture(configJson, configPath);
  const config = architecture.parseConfig(configJson, configPath);
  const resolved = { architecture, config };
  const tokenizerJson = await readJson(join(dir, "tokenizer.json"), true);
  const tokenizerConfig = (await readJson(join(dir, "tokenizer_config.json"), false)) ?? {};
  const generation = (await readJson(join(dir, "generation_config.json"), false)) as
    | { eos_token_id?: unknown }
    | undefined;
  const eos = new Set(config.eosTokenIds);
  const genEos = generation?.eos_token_id;
  for (const id of Array.isArray(genEos) ? genEos : genEos === undefined ? [] : [genEos]) {
    if (Number.isInteger(id)) eos.add(id as number);
  }
  const tokenizer = new TextTokenizer(tokenizerJson, tokenizerConfig, {
    eosTokenIds: [...eos],
    source: join(dir, "tokenizer.json"),
  });
  if (tokenizer.size > config.vocabSize) {
    throw new BringupError(
      "MODEL_TOKENIZER_MISMATCH",
      `${join(dir, "tokenizer.json")} has ${tokenizer.size} tokens but config.json says vocab_size ${config.vocabSize}; they must come from the same model.`,
      { subject: join(dir, "tokenizer.json") },
    );
  }
  const { tensors, numParameters, source } = (await isPackedDirectory(dir))
    ? await readPackedWeights(dir)
    : await readSafetensorsWeights(dir);
  checkMxfp4Layout(configJson as Record<string, unknown>, configPath, tensors.keys());
  const model = buildModel(resolved, (n) => tensors.get(n), [...tensors.keys()], source);
  return {
    name: options.name ?? basename(dir),
    ...resolved,
    model,
    tokenizer,
    directory: dir,
    numParameters,
  };
}

/** The safetensors weights of `dir`, each tensor read and copied into the kernels' memory. */
async function readSafetensorsWeights(dir: string): Promise<HostWeights> {
  const checkpoint = await openCheckpoint(dir);
  const tensors = new Map<string, HostTensor>();
  let numParameters = 0;
  try {
    for (const t of checkpoint.tensors) {
      if (!ENGINE_DTYPES.has(t.dtype)) continue;
      const bytes = await checkpoint.readTensor(t.name);
      // Into the shared WebAssembly memory, where the kernels and their worker threads read
      // the weights in place (a plain shared buffer would have every matmul copy its rows).
      const into = sharedHostArray(t.dtype as HostTensor["dtype"], bytes.byteLength);
      into.bytes.set(bytes);
      tensors.set(t.name, placedHostTensor(t.name, t.dtype as HostTensor["dtype"], t.shape, into));
      numParameters += parameterCount(
        t.name,
        bytes.byteLength,
        into.data.length,
        t.dtype as HostTensor["dtype"],
      );
    }
  } finally {
    await checkpoint.close();
  }
  return { tensors, numParameters, source: dir };
}

/**
 * config.json's MXFP4 code order (`mxfp4_layout`, written by `bringup weights convert --layout
 * halves`) against the tensors: absent with codes in OCP order (`W_blocks`), "halves" with codes
 * re-laid out (`W_hblocks`). An order this engine does not know, or halves codes without the
 * marker (a copy that lost its config.json), is refused naming the field or the tensor.
 */
function checkMxfp4Layout(
  config: Record<string, unknown>,
  configPath: string,
  names: Iterable<string>,
): void {
  const layout = config[MXFP4_LAYOUT_KEY];
  if (layout !== undefined && layout !== MXFP4_HALVES) {
    throw new BringupError(
      "MODEL_MXFP4_LAYOUT_UNKNOWN",
      `${configPath}: ${MXFP4_LAYOUT_KEY} ${JSON.stringify(layout)} is not an MXFP4 code order this engine reads (only "${MXFP4_HALVES}", from \`bringup weights convert --layout halves\`); convert the original checkpoint again.`,
      { subject: `${configPath}#${MXFP4_LAYOUT_KEY}` },
    );
  }
  if (layout === MXFP4_HALVES) return;
  for (const name of names) {
    if (!name.endsWith(HALVES_BLOCKS_SUFFIX)) continue;
    throw new BringupError(
      "MODEL_MXFP4_LAYOUT_UNKNOWN",
      `${name}: MXFP4 codes in halves order, but ${configPath} has no ${MXFP4_LAYOUT_KEY}: "${MXFP4_HALVES}"; restore the config.json \`bringup weights convert --layout halves\` wrote.`,
      { subject: name },
    );
  }
}

async function readJson(path: string, required: true): Promise<unknown>;
async function readJson(path: string, required: false): Promise<unknown | undefined>;
async function readJson(path: string, required: boolean): Promise<unknown | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (cause) {
    if (!required && (cause as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new BringupError(
      "MODEL_FILE_MISSING",
      `${path} cannot be read; a model directory needs config.json, tokenizer.json and safetensors weights.`,
      {
        subject: path,
        cause,
      },
    );
  }
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new BringupError("MODEL_FILE_INVALID", `${path} is not valid JSON: ${(cause as Error).message}`, {
      subject: path,
      cause,
    });
  }
}
