/** The parts of an engine a bench submits streams to (any tree's built engine has them). */
export interface StreamEngine {
  submit(request: object): AsyncIterable<{ token?: { tokenId: number } }>;
}

/** Prefill and decode rates of streams submitted together, of wall time and of the process's CPU time. */
export interface StreamRates {
  prefill: number;
  decode: number;
  /** Tokens per CPU-second of the whole process. */
  prefillCpu: number;
  decodeCpu: number;
  /** Each stream's tokens, in submission order. */
  tokens: number[][];
}

const cpuSeconds = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};

/** `streams` prompts of `promptTokens` token ids each, different by stream (for models without a corpus). */
export function syntheticPrompts(streams: number, promptTokens: number): number[][] {
  return Array.from({ length: streams }, (_, s) =>
    Array.from({ length: promptTokens }, (_, i) => 3 + ((i * 7919 + s * 31) % 2000)),
  );
}

/**
 * Prefill (until every stream has its first token) and decode (from then to the last token, every
 * stream's tokens) rates of greedy requests, one a prompt, each `decodeTokens` tokens out,
 * submitted together; and the tokens each gave. `onDecode` is called as the decode window starts
 * (e.g. to start a profiler), not awaited.
 */
export async function streamRates(
  engine: StreamEngine,
  prompts: readonly (readonly number[])[],
  decodeTokens: number,
  onDecode: () => void = () => {},
): Promise<StreamRates> {
  const streams = prompts.length;
  const promptTokens = prompts.reduce((sum, prompt) => sum + prompt.length, 0);
  const start = performance.now();
  const cpuStart = cpuSeconds();
  let cpuFirst = 0;
  let first = 0;
  let last = 0;
  let started = 0;
  let decoded = 0;
  const tokens = await Promise.all(
    prompts.map(async (prompt) => {
      const ids: number[] = [];
      for await (const out of engine.submit({
        promptTokenIds: prompt,
        maxTokens: decodeTokens,
        ignoreEos: true,
        sampling: { temperature: 0 },
      })) {
        if (!out.token) continue;
        ids.push(out.token.tokenId);
        last = performance.now();
        if (ids.length > 1) decoded++;
        else if (++started === streams) {
          first = last;
          cpuFirst = cpuSeconds();
          decoded = 0;
          onDecode();
        }
      }
      return ids;
    }),
  );
  const cpuLast = cpuSeconds();
  return {
    prefill: promptTokens / ((first - start) / 1000),
    decode: decoded / ((last - first) / 1000),
    prefillCpu: promptTokens / (cpuFirst - cpuStart),
    decodeCpu: decoded / (cpuLast - cpuFirst),
    tokens,
  };
}
