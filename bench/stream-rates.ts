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
}

const cpuSeconds = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};

/**
 * Prefill (until every stream has its first token) and decode (from then to the last token, every
 * stream's tokens) rates of `streams` greedy requests of `promptTokens` tokens each (prompts that
 * differ by stream) and `decodeTokens` tokens out, submitted together. `onDecode` is called as
 * the decode window starts (e.g. to start a profiler), not awaited.
 */
export async function streamRates(
  engine: StreamEngine,
  streams: number,
  promptTokens: number,
  decodeTokens: number,
  onDecode: () => void = () => {},
): Promise<StreamRates> {
  const start = performance.now();
  const cpuStart = cpuSeconds();
  let cpuFirst = 0;
  let first = 0;
  let last = 0;
  let started = 0;
  let decoded = 0;
  await Promise.all(
    Array.from({ length: streams }, async (_, s) => {
      const prompt = Array.from({ length: promptTokens }, (_, i) => 3 + ((i * 7919 + s * 31) % 2000));
      let n = 0;
      for await (const out of engine.submit({
        promptTokenIds: prompt,
        maxTokens: decodeTokens,
        ignoreEos: true,
        sampling: { temperature: 0 },
      })) {
        if (!out.token) continue;
        last = performance.now();
        if (n++ > 0) decoded++;
        else if (++started === streams) {
          first = last;
          cpuFirst = cpuSeconds();
          decoded = 0;
          onDecode();
        }
      }
    }),
  );
  const cpuLast = cpuSeconds();
  return {
    prefill: (streams * promptTokens) / ((first - start) / 1000),
    decode: decoded / ((last - first) / 1000),
    prefillCpu: (streams * promptTokens) / (cpuFirst - cpuStart),
    decodeCpu: decoded / (cpuLast - cpuFirst),
  };
}
