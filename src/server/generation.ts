import { BringupError } from "../common/errors.js";
import {
  type FinishReason,
  type GeneratedToken,
  type GenerateRequest,
  type PromptLogprobs,
  type StepOutput,
  scoredToken,
} from "../engine/index.js";
import type { ServerContext } from "./context.js";
import { StopStringMatcher } from "./stop-strings.js";

export interface GenerationParams extends GenerateRequest {
  readonly stop: readonly string[];
  /** Keep a matched stop string at the end of the text (vLLM's include_stop_str_in_output). */
  readonly includeStopString?: boolean;
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
 * One sequence running in the engine, as a stream of text chunks. `start` resolves once the engine
 * accepted the request, so a refusal answers before any response starts. Leaving the loop early,
 * or aborting `signal`, aborts the request and frees its KV blocks; if the server's drain time
 * ran out, the stream ends with a 503 error instead of a truncated answer.
 */
export class Generation implements AsyncIterable<GenerationChunk> {
  private readonly stopTokens: ReadonlySet<number>;
  readonly promptTokens: number;
  completionTokens = 0;
  /** Sum of the generated tokens' logprobs (best_of keeps the highest); only where they were asked for. */
  cumulativeLogprob: number | undefined;
  finishReason: FinishReason | null = null;

  private constructor(
    private readonly ctx: ServerContext,
    private readonly params: GenerationParams,
    private readonly outputs: AsyncIterableIterator<StepOutput>,
    /** performance.now() when the HTTP request arrived. */
    private readonly arrival: number,
    /** performance.now() when the scheduler first admitted the request (shared by its sequences). */
    private readonly scheduled: { at?: number },
  ) {
    this.promptTokens = params.promptTokenIds.length;
    this.stopTokens = new Set(params.stopTokenIds ?? []);
    this.cumulativeLogprob = params.logprobs === undefined ? undefined : 0;
  }

  /**
   * One generation per seed, sharing the prompt's prefill (each samples with its seed).
   * `onTooSlow` hears at once of a stream its reader left too far behind.
   */
  static async start(
    ctx: ServerContext,
    params: GenerationParams,
    seeds: readonly (number | bigint | undefined)[],
    signal: AbortSignal,
    arrival: number,
    onTooSlow?: (error: unknown) => void,
  ): Promise<Generation[]> {
    const { stop: _stop, includeStopString: _include, ...request } = params;
    const scheduled: { at?: number } = {};
    const streams = await ctx.engine.submit(
      request,
      seeds,
      AbortSignal.any([signal, ctx.shutdown]),
      (seconds) => {
        scheduled.at = performance.now();
        ctx.metrics.queued(seconds);
      },
      onTooSlow,
    );
    ctx.metrics.requestParams(seeds.length, params.maxTokens);
    return streams.map((outputs) => new Generation(ctx, params, outputs, arrival, scheduled));
  }

  /**
   * vLLM matches stop strings only in text after the first min_tokens tokens: a match must end
   * in the text of a later token (vllm/v1/engine/detokenizer.py, BaseIncrementalDetokenizer.update).
   */
  private get pastMinTokens(): boolean {
    return this.completionTokens > (this.params.minTokens ?? 0);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<GenerationChunk> {
    const { metrics, shutdown } = this.ctx;
    const detokenizer = this.ctx.engine.tokenizer.createDetokenizer();
    const matcher = new StopStringMatcher(this.params.stop);
    let last = this.arrival;
    let first: number | undefined;
    let finish: FinishReason = "abort";
    try {
      for await (const out of this.outputs) {
        let text = "";
        let stopReason: string | number | null = null;
        let finishReason = out.finishReason;
        const tokens = out.token ? [out.token] : [];
        if (out.token) {
          const now = performance.now();
          if (this.completionTokens === 0) {
            first = now;
            metrics.firstToken((now - this.arrival) / 1000);
          } else metrics.nextToken((now - last) / 1000);
          last = now;
          // Counted here, as the answer's usage counts them: not the tokens the engine made past a stop string.
          metrics.generated(out.numGeneratedTokens - this.completionTokens);
          this.completionTokens = out.numGeneratedTokens;
          if (this.cumulativeLogprob !== undefined) this.cumulativeLogprob += scoredToken(out.token).logprob;
          // Like vLLM, the token that stopped the request adds its text only with
          // include_stop_str_in_output (vllm/v1/engine/detokenizer.py, update()).
          if (out.finishReason === "stop") {
            if (this.stopTokens.has(out.token.tokenId)) stopReason = out.token.tokenId;
            if (this.params.includeStopString)
              text = matcher.push(detokenizer.push(out.token.tokenId), false).text;
          } else {
            const step = matcher.push(detokenizer.push(out.token.tokenId), this.pastMinTokens);
            text = step.text;
            if (step.stop !== undefined) {
              [finishReason, stopReason] = ["stop", step.stop];
              if (this.params.includeStopString) text += step.stop;
            }
          }
        }
        if (finishReason === "abort" && shutdown.aborted) {
          throw new BringupError(
            "SERVER_SHUTTING_DOWN",
            "the server is shutting down and this request did not finish in its drain time; retry against a running server.",
          );
        }
        if (finishReason !== null && finishReason !== "abort" && typeof stopReason !== "string") {
          const tail = matcher.push(detokenizer.flush(), this.pastMinTokens);
          text += tail.text;
          if (tail.stop !== undefined) {
            [finishReason, stopReason] = ["stop", tail.stop];
            if (this.params.includeStopString) text += tail.stop;
          } else text += matcher.flush();
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
          this.finishReason = finishReason;
          // Returning leaves the engine's stream, which aborts the request if it is still running.
          return;
        }
      }
    } finally {
      const at = this.scheduled.at ?? first ?? last;
      metrics.finish(finish, {
        e2eSeconds: (performance.now() - this.arrival) / 1000,
        promptTokens: this.promptTokens,
        generationTokens: this.completionTokens,
        ...(first !== undefined
          ? { prefillSeconds: (first - at) / 1000, decodeSeconds: (last - first) / 1000 }
          : {}),
      });
    }
  }
}
