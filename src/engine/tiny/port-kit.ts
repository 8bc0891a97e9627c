import { BringupError } from "../../common/errors.js";
import { encodeMxfp4 } from "../../formats/index.js";
import type { AttentionNames, AttentionSpec } from "../blocks/attention/gqa-attention.js";
import type { MlpNames } from "../blocks/mlp/swiglu-mlp.js";
import type { HostTensor } from "../loader/host-tensor.js";
import { Rng } from "../tensor/random.js";
import type { TinyModelFiles } from "./files.js";
import { tinyModelFiles, tinyTokenizer } from "./files.js";
import { f32Tensors, filled, type PutF32, tensorSeed } from "./weights.js";

/** Specials the tiny tokenizers append after the trained vocabulary. */
const SPECIALS = 3;

/** What a port's tinyModel writes its seeded tensors with, and how it ends as model files. */
export interface TinyKit {
  /** Tokens of the trained BPE with its specials (the config's vocab_size, or fewer). */
  readonly vocab: number;
  readonly tensors: Map<string, HostTensor>;
  readonly put: PutF32;
  /** Normal draws of `std` from the tensor's own seed (see tensorSeed). */
  random(name: string, shape: number[], std: number): void;
  /** `map` of uniform draws in [0, 1) from the tensor's own seed. */
  uniform(name: string, shape: number[], map: (u: number) => number): void;
  /** A [rows, cols] matrix scaled by fan-in, so activations stay near unit size. */
  matrix(name: string, rows: number, cols: number): void;
  ones(name: string, n: number): void;
  /** A gated MLP's three projections under `prefix`. */
  mlp(prefix: string, names: MlpNames, hidden: number, intermediate: number): void;
  /** An attention layer's q/k/v/o projections (and their biases when the spec has them). */
  attention(names: AttentionNames, spec: AttentionSpec, hidden: number): void;
  /**
   * Re-stores the f32 tensor `name` [..., cols] in MXFP4 as checkpoints do: `<name>_blocks`
   * [..., cols/32, 16] and `<name>_scales` [..., cols/32] (the OCP encoder's scales and rounding).
   */
  toMxfp4(name: string): void;
  /** The model files: `config` with the trained vocabulary, its end token and the port's stamp. */
  files(config: Record<string, unknown>, architecture: string, port?: string): TinyModelFiles;
}

/** The config fields a tiny tokenizer is trained to. */
export interface TinyVocabSpec {
  readonly vocabSize: number;
  readonly maxPositionEmbeddings: number;
}

/**
 * A byte-level BPE trained on `corpus` to the config's vocab_size, three of its ids specials;
 * refused naming vocab_size when that leaves no room for merges.
 */
export function tinyPortTokenizer(spec: TinyVocabSpec, corpus: string): ReturnType<typeof tinyTokenizer> {
  if (spec.vocabSize <= 256 + SPECIALS) {
    throw new BringupError(
      "MODEL_CONFIG_INVALID",
      `reference config: vocab_size: ${spec.vocabSize} leaves no room for BPE merges over 256 bytes and ${SPECIALS} specials; raise it.`,
      { subject: "vocab_size" },
    );
  }
  return tinyTokenizer(corpus, spec.vocabSize - SPECIALS, spec.maxPositionEmbeddings);
}

/**
 * The start of every port's tiny reference model: a byte-level BPE trained on `corpus` to the
 * config's vocab_size (three of its ids are specials) and seeded tensor writers, so the same
 * config, corpus and seed give the same bytes whatever order the tensors are written in.
 */
export function tinyKit(spec: TinyVocabSpec, corpus: string, seed: number): TinyKit {
  const tok = tinyPortTokenizer(spec, corpus);
  const { tensors, put } = f32Tensors();
  const size = (shape: number[]) => shape.reduce((a, b) => a * b, 1);
  const random = (name: string, shape: number[], std: number) =>
    put(name, shape, new Rng(tensorSeed(seed, name)).fillNormal(new Float32Array(size(shape)), std));
  const matrix = (name: string, rows: number, cols: number) =>
    random(name, [rows, cols], 1 / Math.sqrt(cols));
  return {
    vocab: tok.vocab,
    tensors,
    put,
    random,
    uniform(name, shape, map) {
      const rng = new Rng(tensorSeed(seed, name));
      put(
        name,
        shape,
        Float32Array.from({ length: size(shape) }, () => map(rng.next())),
      );
    },
    matrix,
    ones: (name, n) => put(name, [n], filled(n, 1)),
    mlp(prefix, names, hidden, intermediate) {
      matrix(`${prefix}.${names[0]}.weight`, intermediate, hidden);
      matrix(`${prefix}.${names[1]}.weight`, intermediate, hidden);
      matrix(`${prefix}.${names[2]}.weight`, hidden, intermediate);
    },
    attention(names, a, hidden) {
      matrix(`${names.q}.weight`, a.numHeads * a.headDim, hidden);
      matrix(`${names.k}.weight`, a.numKvHeads * a.headDim, hidden);
      matrix(`${names.v}.weight`, a.numKvHeads * a.vHeadDim, hidden);
      matrix(`${names.o}.weight`, hidden, a.numHeads * a.vHeadDim);
      if (a.bias) {
        random(`${names.q}.bias`, [a.numHeads * a.headDim], 0.1);
        random(`${names.k}.bias`, [a.numKvHeads * a.headDim], 0.1);
        random(`${names.v}.bias`, [a.numKvHeads * a.vHeadDim], 0.1);
      }
    },
    toMxfp4(name) {
      const t = tensors.get(name);
      if (t === undefined || t.dtype !== "F32")
        throw new Error(`unreachable: no f32 tensor ${name} to encode`);
      const { blocks, scales } = encodeMxfp4(t.data as Float32Array, name);
      const lead = t.shape.slice(0, -1);
      const groups = (t.shape.at(-1) as number) / 32;
      tensors.delete(name);
      tensors.set(`${name}_blocks`, { dtype: "U8", shape: [...lead, groups, 16], data: blocks });
      tensors.set(`${name}_scales`, { dtype: "U8", shape: [...lead, groups], data: scales });
    },
    files: (config, architecture, port) =>
      tinyModelFiles(
        {
          ...config,
          architectures: [architecture],
          vocab_size: tok.vocab,
          bos_token_id: null,
          eos_token_id: tok.eos,
          torch_dtype: "float32",
          bringup_tiny: { ...(port !== undefined ? { port } : {}), seed },
        },
        tok,
        tensors,
      ),
  };
}
