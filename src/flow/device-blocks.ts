import { join } from "node:path";
import { BringupError } from "../common/errors.js";
import { Engine, loadModel, readCorpus } from "../engine/index.js";
import { writeSafetensors } from "../formats/index.js";
import { loadPort } from "./port-weights.js";
import { cachedTinyModel } from "./tiny-model.js";

/** Prompt tokens by default: more than one KDA chunk (64), so a chunk boundary is crossed. */
export const DEVICE_BLOCKS_TOKENS = 100;
/** Greedy decode steps after the prompt by default, each one token against the sequence's state. */
export const DEVICE_BLOCKS_DECODE = 4;

/** The dump's format, in its metadata; the plugin's test helper (device-plugin/tests/blocks.py) checks it. */
export const DEVICE_BLOCKS_FORMAT = "bringup-device-blocks/1";

export interface DeviceBlocksOptions {
  readonly root: string;
  readonly portId: string;
  /** The safetensors file to write (atomically). */
  readonly out: string;
  /** Prompt length: the first `tokens` tokens of the shipped corpus (default DEVICE_BLOCKS_TOKENS). */
  readonly tokens?: number;
  /** Greedy decode steps after the prefill, each dumped too (default DEVICE_BLOCKS_DECODE). */
  readonly decode?: number;
  readonly cacheDir?: string;
}

export interface DeviceBlocksResult {
  readonly port: string;
  /** The tiny checkpoint the engine ran, which the plugin's check loads too. */
  readonly modelDir: string;
  readonly out: string;
  readonly tokens: number;
  readonly decode: number;
  /** The tensors written, in file order. */
  readonly tensors: readonly string[];
}

/**
 * Runs the reference engine on a port's tiny checkpoint (its manifest's reference config and
 * switches) over a fixed prompt, the first `tokens` tokens of the shipped corpus, prefilled in one
 * step or in several the engine chose (their rows joined in order, see isPrefillThenDecode), then `decode` greedy steps of one token each, and writes what the engine's tap
 * (model/model.ts ForwardTap) saw to `out` as float32 safetensors, the steps' rows one after the
 * other (N = tokens + decode): `input_ids` [N] (int32: the prompt, then the tokens decoded),
 * `embed` [N, hidden], `layers.L.mixer` and `layers.L.ffn` (the residual stream [N, streams x
 * hidden] after layer L's mixer and after its feed-forward part), `logits` [N, vocab]. Its
 * metadata names the checkpoint directory, the port, the switches, the stream count and the
 * prefill length, so the device plugin's block-by-block check (device-plugin/tests/blocks.py) runs
 * its own layers on the engine's input to each and compares their outputs.
 */
export async function deviceBlocks(options: DeviceBlocksOptions): Promise<DeviceBlocksResult> {
  const { port, reference, portModel } = await loadPort(options.root, options.portId, false);
  const T = options.tokens ?? DEVICE_BLOCKS_TOKENS;
  if (!Number.isInteger(T) || T < 2 || T > reference.max_model_len) {
    throw new BringupError(
      "DEVICE_BLOCKS_TOKENS",
      `${T} prompt tokens cannot be dumped for ${port.id}: give a whole number from 2 to its max_model_len ${reference.max_model_len}.`,
      { subject: String(T) },
    );
  }
  const D = options.decode ?? DEVICE_BLOCKS_DECODE;
  if (!Number.isInteger(D) || D < 0 || T + D > reference.max_model_len) {
    throw new BringupError(
      "DEVICE_BLOCKS_TOKENS",
      `${D} decode steps after ${T} prompt tokens cannot be dumped for ${port.id}: give a whole number from 0 that keeps both within its max_model_len ${reference.max_model_len}.`,
      { subject: String(D) },
    );
  }
  const corpus = await readCorpus();
  const cacheDir = options.cacheDir ?? join(options.root, ".cache", "bringup", "models");
  const family = portModel as NonNullable<typeof portModel>;
  const tiny = await cachedTinyModel(port.id, reference.config, family, corpus, cacheDir);
  const model = await loadModel(tiny.dir);
  const prompt = model.tokenizer.encode(corpus, { addSpecialTokens: false }).slice(0, T);
  const seen = new Map<string, { values: Float32Array; rows: number }[]>();
  const engine = new Engine(model, {
    maxNumSeqs: 1,
    maxModelLen: reference.max_model_len,
    maxNumBatchedTokens: Math.max(T, 2048),
    ...(reference.switches ? { switches: reference.switches } : {}),
    tap: (site, values, rows) => {
      const list = seen.get(site) ?? [];
      list.push({ values, rows });
      seen.set(site, list);
    },
  });
  const fed = [...prompt];
  try {
    // Ignoring end-of-sequence tokens, so every step runs; the last sampled token is not fed.
    const request = {
      promptTokenIds: prompt,
      maxTokens: D + 1,
      promptLogprobs: 0,
      ignoreEos: true,
      sampling: { temperature: 0 },
    };
    for await (const step of engine.submit(request)) {
      if (step.token !== undefined && fed.length < T + D) fed.push(step.token.tokenId);
    }
  } finally {
    await engine.close();
  }
  const N = T + D;
  const tensors = [
    { name: "input_ids", dtype: "I32" as const, shape: [N], data: bytesOf(Int32Array.from(fed)) },
    ...[...seen].map(([site, steps]) => {
      const rows = steps.map((step) => step.rows);
      if (fed.length !== N || !isPrefillThenDecode(rows, T, D)) {
        throw new BringupError(
          "DEVICE_BLOCKS_STEPS",
          `the engine ran ${port.id}'s ${T}-token prompt and ${D} decode steps as steps of [${rows.join(", ")}] rows at ${site}, not a prefill (in one or more steps) and single tokens; this is a bug in bringup's device blocks.`,
          { subject: site },
        );
      }
      const values = new Float32Array(steps.reduce((n, step) => n + step.values.length, 0));
      let at = 0;
      for (const step of steps) {
        values.set(step.values, at);
        at += step.values.length;
      }
      return { name: site, dtype: "F32" as const, shape: [N, values.length / N], data: bytesOf(values) };
    }),
  ];
  await writeSafetensors(options.out, tensors, {
    format: DEVICE_BLOCKS_FORMAT,
    port: port.id,
    model_dir: tiny.dir,
    switches: JSON.stringify(reference.switches ?? {}),
    streams: String(model.model.residual.streams),
    prefill: String(T),
  });
  return {
    port: port.id,
    modelDir: tiny.dir,
    out: options.out,
    tokens: T,
    decode: D,
    tensors: tensors.map((t) => t.name),
  };
}

/**
 * Whether a tap's steps are a T-row prefill, run in one step or several (the engine prefills some
 * models, DeepSeek-V4's among them, in fixed-size steps: [32, 32, 32, 4] for 100 tokens), then D
 * single-token decode steps. Rows are then in sequence order, so the steps join by concatenation.
 */
export function isPrefillThenDecode(rows: readonly number[], T: number, D: number): boolean {
  let k = 0;
  for (let sum = 0; sum < T; k++) {
    const r = rows[k];
    if (r === undefined || r < 1) return false;
    sum += r;
    if (sum > T) return false;
  }
  return rows.length === k + D && rows.slice(k).every((r) => r === 1);
}

function bytesOf(values: Float32Array | Int32Array): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}
