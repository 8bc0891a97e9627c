// The engine's own thread: loads the model, runs the engine loop, relays outputs to the HTTP thread.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parentPort, workerData } from "node:worker_threads";
import { BringupError, isBringupError } from "../common/errors.js";
import {
  Engine,
  findTinySize,
  type GenerateRequest,
  generateTinyModel,
  loadModel,
  readCorpus,
  type StepOutput,
  tinyFilesToModel,
} from "../engine/index.js";
import type { EngineThreadData, FromEngine, ThreadError, ToEngine } from "./engine-thread-protocol.js";
import { packedBuffers, packPromptLogprobs } from "./packed-logprobs.js";

const port = parentPort as NonNullable<typeof parentPort>;
const post = (message: FromEngine) => port.postMessage(message);

function threadError(error: unknown): ThreadError {
  if (isBringupError(error))
    return { code: error.code, message: error.message, ...(error.subject ? { subject: error.subject } : {}) };
  return { code: "ENGINE_THREAD_FAILED", message: error instanceof Error ? error.message : String(error) };
}

async function load(data: EngineThreadData) {
  const { source } = data;
  if ("tinySize" in source) {
    const size = findTinySize(source.tinySize);
    if (size === undefined)
      throw new BringupError("TINY_SIZE_UNKNOWN", `there is no tiny size "${source.tinySize}".`);
    const files = generateTinyModel(size, await readCorpus());
    return {
      model: await tinyFilesToModel(size.name, files),
      tokenizerJson: files.tokenizerJson as unknown,
      tokenizerConfig: files.tokenizerConfig as unknown,
    };
  }
  const model = await loadModel(source.modelDir);
  const dir = model.directory ?? source.modelDir;
  const tokenizerJson = JSON.parse(await readFile(join(dir, "tokenizer.json"), "utf8"));
  const tokenizerConfig = await readFile(join(dir, "tokenizer_config.json"), "utf8").then(
    (text) => JSON.parse(text) as unknown,
    () => ({}),
  );
  return { model, tokenizerJson, tokenizerConfig };
}

async function main(): Promise<void> {
  const data = workerData as EngineThreadData;
  let engine: Engine;
  try {
    const loaded = await load(data);
    engine = new Engine(loaded.model, data.options);
    post({
      type: "ready",
      name: loaded.model.name,
      root: loaded.model.directory ?? loaded.model.name,
      limits: engine.limits,
      vocabSize: loaded.model.config.vocabSize,
      tokenizerJson: loaded.tokenizerJson,
      tokenizerConfig: loaded.tokenizerConfig,
      eosTokenIds: loaded.model.tokenizer.eosTokenIds,
      stats: engine.stats(),
    });
  } catch (error) {
    post({ type: "load-failed", error: threadError(error) });
    port.close();
    return;
  }
  /** Each sequence's stream, by id, to leave when the HTTP thread aborts it. */
  const streams = new Map<number, AsyncIterableIterator<StepOutput>>();
  // Each step's tokens wait for the next stats message: a step with outputs always queues one.
  let steps: number[] = [];
  engine.onStep((tokens) => steps.push(tokens));
  const postStats = () => {
    post({ type: "stats", stats: engine.stats(), steps });
    steps = [];
  };
  // One stats message per burst of outputs, sent before the engine's next step starts.
  let statsQueued = false;
  const queueStats = () => {
    if (statsQueued) return;
    statsQueued = true;
    queueMicrotask(() => {
      statsQueued = false;
      postStats();
    });
  };
  const relay = async (id: number, outputs: AsyncIterableIterator<StepOutput>) => {
    try {
      for await (const output of outputs) {
        const { promptLogprobs, ...rest } = output;
        if (promptLogprobs === undefined) post({ type: "output", id, output });
        else {
          const packed = packPromptLogprobs(promptLogprobs);
          port.postMessage(
            { type: "output", id, output: rest, packed } satisfies FromEngine,
            packedBuffers(packed),
          );
        }
        queueStats();
      }
      post({ type: "end", id });
    } catch (error) {
      post({ type: "failed", id, error: threadError(error) });
    } finally {
      streams.delete(id);
    }
  };
  const run = (
    ids: readonly number[],
    request: GenerateRequest,
    seeds: readonly (number | bigint | undefined)[],
  ) => {
    const id = ids[0] as number;
    let outputs: AsyncIterableIterator<StepOutput>[];
    try {
      outputs = engine.submitShared(request, seeds, undefined, (queueSeconds) =>
        post({ type: "scheduled", id, queueSeconds }),
      );
    } catch (error) {
      post({ type: "rejected", id, error: threadError(error) });
      return;
    }
    outputs.forEach((o, i) => {
      streams.set(ids[i] as number, o);
    });
    post({ type: "accepted", id });
    // Now, not after a microtask: the engine's next step (maybe a long prefill) runs first otherwise.
    postStats();
    outputs.forEach((o, i) => void relay(ids[i] as number, o));
  };
  port.on("message", (message: ToEngine) => {
    if (message.type === "submit") run(message.ids, message.request, message.seeds);
    else if (message.type === "abort") void streams.get(message.id)?.return?.();
    else
      void engine.close().then(() => {
        post({ type: "closed" });
        port.close();
      });
  });
}

void main();
