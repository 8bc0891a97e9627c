/**
 * The cases of one kernel A/B (bench/kernel-before-after.ts) and the builders its kernels share: a
 * case at one input row chunk by chunk, the fused step against a decode then the tile, a decode
 * alone and with the tile. The after arm takes `afterChunk` weight rows at a time, the before arm
 * `chunk`.
 */
import { type Arm, allocate, memory, rng } from "./kernel-arena.js";

/** A case: one call of `run(arm)` does `work` units (flops or weights) and writes `outBytes` at `outAt(arm)`. */
export interface Case {
  readonly label: string;
  readonly unit: string;
  readonly work: number;
  outAt(arm: Arm): number;
  readonly outBytes: number;
  run(arm: Arm): void;
}

type Step = (arm: Arm, x: number, c0: number, acc: number, o: number, chunk: number) => void;
type Decode = (arm: Arm, c0: number, rows: number, chunk: number) => void;

export class KernelCases {
  readonly list: Case[] = [];

  constructor(
    private readonly after: Arm,
    private readonly chunk: number,
    private readonly afterChunk: number,
    /** The f32 tile (matmul-tile.wat's `tile`) the decode cases run after a decode. */
    private readonly tile: (...a: number[]) => void,
  ) {}

  /** Weight rows `arm` takes at a time. */
  chunkOf(arm: Arm): number {
    return arm === this.after ? this.afterChunk : this.chunk;
  }

  push(c: Case): void {
    this.list.push(c);
  }

  /**
   * A case at one input row over [N, K], chunk by chunk: `step(arm, x, c0, acc, o, chunk)` computes
   * the outputs of rows c0.. (acc: 128 bytes of scratch; o: the chunk's first output).
   */
  rowStep(label: string, N: number, K: number, step: Step): void {
    const [x, o, acc] = [allocate(K * 4), allocate(N * 4), allocate(128)];
    rng.fillNormal(new Float32Array(memory.buffer, x, K), 1);
    this.push({
      label,
      unit: "G weights/s",
      work: N * K,
      outAt: () => o,
      outBytes: N * 4,
      run: (arm) => {
        const chunk = this.chunkOf(arm);
        for (let c0 = 0; c0 < N; c0 += chunk) step(arm, x, c0, acc, o + c0 * 4, chunk);
      },
    });
  }

  /**
   * The fused step at one input row over [N, K], chunk by chunk: the before arm's `decode` of each
   * chunk into scratch then the tile, against the after arm's `step` decoding it straight into the
   * multiply-adds.
   */
  fusedStep(
    label: string,
    N: number,
    K: number,
    decode: Decode,
    step: (x: number, c0: number, acc: number, o: number, chunk: number) => void,
  ): void {
    const rows = allocate(this.chunk * K * 4);
    this.rowStep(label, N, K, (arm, x, c0, acc, o, chunk) => {
      if (arm === this.after) step(x, c0, acc, o, chunk);
      else {
        decode(arm, c0, rows, chunk);
        this.tile(K, 1, x, rows, o, chunk / 4, N * 4);
      }
    });
  }

  /**
   * A decode alone and with the tile after it at M=1: `decode` writes rows [c0, c0 + chunk) at
   * `rows`; `of` says what is decoded, after the labels.
   */
  decode(N: number, K: number, decode: Decode, of = ""): void {
    const rows = allocate(Math.max(this.chunk, this.afterChunk) * K * 4);
    const least = Math.min(this.chunk, this.afterChunk);
    const x = allocate(K * 4);
    rng.fillNormal(new Float32Array(memory.buffer, x, K), 1);
    const o = allocate(N * 4);
    for (const withTile of [false, true]) {
      this.push({
        label: `${withTile ? "decode, then the tile at M=1" : "decode alone"}${of}`,
        unit: "G weights/s",
        work: N * K,
        // Decoded alone: the last rows both arms' last chunks hold.
        outAt: (arm) => (withTile ? o : rows + (this.chunkOf(arm) - least) * K * 4),
        outBytes: withTile ? N * 4 : least * K * 4,
        run: (arm) => {
          const chunk = this.chunkOf(arm);
          for (let c0 = 0; c0 < N; c0 += chunk) {
            decode(arm, c0, rows, chunk);
            if (withTile) this.tile(K, 1, x, rows, o + c0 * 4, chunk / 4, N * 4);
          }
        },
      });
    }
  }
}
