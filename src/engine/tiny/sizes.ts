/** One named tiny model shape. Tiny models are llama-style (or mixtral-style with experts). */
export interface TinySize {
  readonly name: string;
  readonly purpose: string;
  /** Target vocabulary of the trained BPE (the corpus may yield fewer merges), plus 3 specials. */
  readonly bpeVocab: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly intermediateSize: number;
  readonly maxPositionEmbeddings: number;
  readonly experts?: {
    readonly numExperts: number;
    readonly topK: number;
    readonly intermediateSize: number;
  };
}

/** The size table, smallest first (in the spirit of gpt-fast's named configs). */
export const TINY_SIZES: readonly TinySize[] = [
  {
    name: "tiny",
    purpose: "unit tests",
    bpeVocab: 512,
    hiddenSize: 64,
    numLayers: 4,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 16,
    intermediateSize: 256,
    maxPositionEmbeddings: 2048,
  },
  {
    name: "tiny-moe",
    purpose: "unit tests of the MoE path",
    bpeVocab: 512,
    hiddenSize: 64,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 16,
    intermediateSize: 128,
    maxPositionEmbeddings: 2048,
    experts: { numExperts: 4, topK: 2, intermediateSize: 128 },
  },
  {
    name: "small",
    purpose: "end-to-end tests, server default",
    bpeVocab: 2048,
    hiddenSize: 256,
    numLayers: 6,
    numHeads: 8,
    numKvHeads: 4,
    headDim: 32,
    intermediateSize: 768,
    maxPositionEmbeddings: 8192,
  },
  {
    name: "medium",
    purpose: "quick benchmarks",
    bpeVocab: 4096,
    hiddenSize: 512,
    numLayers: 8,
    numHeads: 8,
    numKvHeads: 4,
    headDim: 64,
    intermediateSize: 1536,
    maxPositionEmbeddings: 32768,
  },
  {
    name: "bench-100m",
    purpose: "benchmarks against llama.cpp",
    bpeVocab: 4096,
    hiddenSize: 768,
    numLayers: 14,
    numHeads: 12,
    numKvHeads: 4,
    headDim: 64,
    intermediateSize: 2304,
    maxPositionEmbeddings: 32768,
  },
];

export function findTinySize(name: string): TinySize | undefined {
  return TINY_SIZES.find((s) => s.name === name);
}

/** Parameter count of a size with a vocabulary of `vocab` tokens (untied embeddings). */
export function tinyParameterCount(s: TinySize, vocab: number): number {
  const H = s.hiddenSize;
  const attention = H * s.numHeads * s.headDim * 2 + H * s.numKvHeads * s.headDim * 2;
  const mlp = s.experts
    ? s.experts.numExperts * 3 * H * s.experts.intermediateSize + s.experts.numExperts * H
    : 3 * H * s.intermediateSize;
  return 2 * vocab * H + s.numLayers * (attention + mlp + 2 * H) + H;
}
