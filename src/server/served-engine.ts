import type {
  Engine,
  EngineLimits,
  EngineStats,
  GenerateRequest,
  StepOutput,
  TextTokenizer,
} from "../engine/index.js";
import { OutputBuffer } from "./output-buffer.js";

/** Most step outputs a request may leave unread before it is aborted, by default (see OutputBuffer). */
export const MAX_UNREAD_OUTPUTS = 1024;

/**
 * The engine as the routes see it, wherever it runs: on its own thread (EngineThread) or on the
 * HTTP thread (InThreadEngine, for a model already in memory). Nothing here waits for a step.
 */
export interface ServedEngine {
  readonly tokenizer: TextTokenizer;
  readonly limits: EngineLimits;
  readonly vocabSize: number;
  /** The model's own name and where it came from (the `root` of /v1/models). */
  readonly modelName: string;
  readonly modelRoot: string;
  /**
   * Queues a request as one sequence per seed, sharing the prompt's prefill (Engine.submitShared);
   * resolves with their output streams once the engine accepted it, rejects with the engine's
   * BringupError when it refused it (so a response has not started yet). Leaving one stream
   * aborts that sequence; aborting `signal` aborts them all. A stream left more than its unread
   * limit (MAX_UNREAD_OUTPUTS by default) behind is aborted and `onTooSlow` told.
   */
  submit(
    request: GenerateRequest,
    seeds: readonly (number | bigint | undefined)[],
    signal: AbortSignal,
    onScheduled: (queueSeconds: number) => void,
    onTooSlow?: (error: unknown) => void,
  ): Promise<AsyncIterableIterator<StepOutput>[]>;
  /** The latest figures (as of the last step boundary when the engine runs on its own thread). */
  stats(): EngineStats;
  /**
   * Tells `listener` each step's tokens (Engine.onStep), in order; from the engine's own thread
   * they arrive with its stats, after the step.
   */
  onStep(listener: (tokens: number) => void): void;
  /** Aborts every request and stops the engine. */
  close(): Promise<void>;
}

/** An engine stepping on the HTTP thread: a long prefill delays every route while it runs. */
export class InThreadEngine implements ServedEngine {
  readonly modelName: string;
  readonly modelRoot: string;

  constructor(
    private readonly engine: Engine,
    private readonly maxUnreadOutputs = MAX_UNREAD_OUTPUTS,
  ) {
    this.modelName = engine.model.name;
    this.modelRoot = engine.model.directory ?? engine.model.name;
  }

  get tokenizer(): TextTokenizer {
    return this.engine.tokenizer;
  }

  get limits(): EngineLimits {
    return this.engine.limits;
  }

  get vocabSize(): number {
    return this.engine.model.config.vocabSize;
  }

  async submit(
    request: GenerateRequest,
    seeds: readonly (number | bigint | undefined)[],
    signal: AbortSignal,
    onScheduled: (queueSeconds: number) => void,
    onTooSlow?: (error: unknown) => void,
  ): Promise<AsyncIterableIterator<StepOutput>[]> {
    const streams = this.engine.submitShared(request, seeds, signal, onScheduled);
    return streams.map((outputs) => {
      const buffer = new OutputBuffer(this.maxUnreadOutputs, () => void outputs.return?.(), onTooSlow);
      void (async () => {
        try {
          for await (const out of outputs) buffer.push(out);
          buffer.close();
        } catch (error) {
          buffer.fail(error);
        }
      })();
      return buffer;
    });
  }

  stats(): EngineStats {
    return this.engine.stats();
  }

  onStep(listener: (tokens: number) => void): void {
    this.engine.onStep(listener);
  }

  close(): Promise<void> {
    return this.engine.close();
  }
}
