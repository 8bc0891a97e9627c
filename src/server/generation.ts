import type {
  Engine,
  FinishReason,
  GeneratedToken,
  PromptLogprobs,
  SamplingParams,
  StepOutput,
} from "../engine/index.js";
import type { ServerMetrics } from "./metrics.js";
import { StopStringMatcher } from "./stop-strings.js";

export interface GenerationParams {
  readonly promptTokenIds: readonly number[];
  readonly maxTokens: number;
  readonly sampling: SamplingParams;
  /** Top alternatives per generated token; undefined asks for no logprobs. */
  readonly logprobs?: number;
  /** Top alternatives per prompt position; undefined asks for no prompt logprobs. */
  readonly promptLogprobs?: number;
  readonly stop: readonly string[];
  readonly stopTokenIds?: readonly number[];
  readonly ignoreEos?: boolean;
}

/** What one step of a request adds: text that may be sent, the tokens behind it, and its end. */
export interface GenerationChunk {
  /** Text released by this chunk (stop strings and incomplete characters are held back). */
  readonly text: string;
  /** Tokens generated since the previous chunk, with their logprobs. */
  readonly tokens: readonly GeneratedToken[];
  readonly finishReason: FinishReason | null;
  /** vLLM's stop_reason: the stop string or stop token id that ended the request, else null. */
  readonly stopReason: string | number | null;
  /** On the first chunk, when prompt logprobs were asked for. */
  readonly promptLogprobs?: PromptLogprobs;
}

/**
 * One request running in the engine, as a stream of text chunks. The request is submitted when the
 * Generation is constructed, so a request the engine refuses throws there, before any response is
 * started. Leaving the loop early, or aborting `signal`, aborts the request and frees its KV blocks.
 */
export class Generation implements AsyncIterable<GenerationChunk> {
  private readonly outputs: AsyncIterableIterator<StepOutput>;
  private readonly stopTokens: ReadonlySet<number>;
  readonly promptTokens: number;
  completionTokens = 0;

  constructor(
    private readonly engine: Engine,
    private readonly params: GenerationParams,
    signal: AbortSignal,
    private readonly metrics: ServerMetrics,
    /** performance.now() when the HTTP request arrived. */
    private readonly arrival: number,
  ) {
    this.promptTokens = params.promptTokenIds.length;
    this.stopTokens = new Set(params.stopTokenIds ?? []);
    this.outputs = engine.submit(
      {
        promptTokenIds: params.promptTokenIds,
        maxTokens: params.maxTokens,
        sampling: params.sampling,
        ...(params.logprobs !== undefined ? { logprobs: params.logprobs } : {}),
        ...(params.promptLogprobs !== undefined ? { promptLogprobs: params.promptLogprobs } : {}),
        ...(params.stopTokenIds !== undefined ? { stopTokenIds: params.stopTokenIds } : {}),
        ...(params.ignoreEos ? { ignoreEos: true } : {}),
      },
      signal,
    );
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<GenerationChunk> {
    const detokenizer = this.engine.tokenizer.createDetokenizer();
    const matcher = new StopStringMatcher(this.params.stop);
    let last = this.arrival;
    let finish: FinishReason = "abort";
    try {
      for await (const out of this.outputs) {
        let text = "";
        let stopReason: string | number | null = null;
        let finishReason = out.finishReason;
        const tokens = out.token ? [out.token] : [];
        if (out.token) {
          const now = performance.now();
          if (this.completionTokens === 0) this.metrics.firstToken((now - this.arrival) / 1000);
          else this.metrics.nextToken((now - last) / 1000);
          last = now;
          this.completionTokens = out.numGeneratedTokens;
          // Like vLLM, the token that stopped the request adds no text.
          if (out.finishReason === "stop") {
            if (this.stopTokens.has(out.token.tokenId)) stopReason = out.token.tokenId;
          } else {
            const step = matcher.push(detokenizer.push(out.token.tokenId));
            text = step.text;
            if (step.stop !== undefined) [finishReason, stopReason] = ["stop", step.stop];
          }
        }
        if (finishReason !== null && finishReason !== "abort" && typeof stopReason !== "string") {
          const tail = matcher.push(detokenizer.flush());
          text += tail.text;
          if (tail.stop !== undefined) [finishReason, stopReason] = ["stop", tail.stop];
          else text += matcher.flush();
        }
        yield {
          text,
          tokens,
          finishReason,
          stopReason,
          ...(out.promptLogprobs !== undefined ? { promptLogprobs: out.promptLogprobs } : {}),
        };
        if (finishReason !== null) {
          finish = finishReason;
          // Returning leaves the engine's stream, which aborts the request if it is still running.
          return;
        }
      }
    } finally {
      this.metrics.finish(finish, (performance.now() - this.arrival) / 1000);
    }
  }
}
