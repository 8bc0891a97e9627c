import { Worker } from "node:worker_threads";
import { BringupError } from "../common/errors.js";
import {
  type EngineLimits,
  type EngineOptions,
  type EngineStats,
  type GenerateRequest,
  type StepOutput,
  TextTokenizer,
} from "../engine/index.js";
import type {
  EngineThreadData,
  FromEngine,
  ModelSource,
  ThreadError,
  ToEngine,
} from "./engine-thread-protocol.js";
import { OutputBuffer } from "./output-buffer.js";
import { unpackPromptLogprobs } from "./packed-logprobs.js";
import { MAX_UNREAD_OUTPUTS, type ServedEngine } from "./served-engine.js";

/** Run from TypeScript sources (tests, tsx), the worker needs tsx's loader too (a dev dependency). */
const FROM_SOURCE = import.meta.url.endsWith(".ts");
const WORKER_URL = new URL(
  FROM_SOURCE ? "./engine-thread-worker.ts" : "./engine-thread-worker.js",
  import.meta.url,
);

function fromThread(error: ThreadError): BringupError {
  return new BringupError(error.code, error.message, error.subject ? { subject: error.subject } : undefined);
}

/** A request not yet accepted or refused, under its first sequence's id. */
interface Pending {
  readonly accept: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The engine on a worker thread of its own, which loads the model itself: the HTTP thread only
 * tokenizes and relays, so /health and /metrics answer while a long prefill runs. Stats arrive
 * after every step and are read from here without waiting.
 */
export class EngineThread implements ServedEngine {
  private readonly pending = new Map<number, Pending>();
  /** Each sequence's output stream, by id, until it ends. */
  private readonly streams = new Map<number, OutputBuffer>();
  /** Who hears a request's queue time, under its first sequence's id, until it is scheduled. */
  private readonly onScheduled = new Map<number, (queueSeconds: number) => void>();
  /** Streams whose prompt logprobs are being rebuilt: what arrives for them meanwhile waits. */
  private readonly unpacking = new Map<number, Promise<void>>();
  private nextId = 0;
  private closed = false;
  private latest: EngineStats;
  private readonly stepListeners: ((tokens: number) => void)[] = [];
  private readonly exited: Promise<void>;

  private constructor(
    private readonly worker: Worker,
    ready: Extract<FromEngine, { type: "ready" }>,
    readonly tokenizer: TextTokenizer,
    private readonly maxUnreadOutputs: number,
  ) {
    this.limits = ready.limits;
    this.vocabSize = ready.vocabSize;
    this.modelName = ready.name;
    this.modelRoot = ready.root;
    this.latest = ready.stats;
    this.exited = new Promise((done) => worker.once("exit", () => done()));
    worker.on("message", (m: FromEngine) => this.receive(m));
    worker.on("error", (error) => this.failAll(error));
    worker.once("exit", () => {
      this.closed = true;
      this.failAll(new BringupError("ENGINE_CLOSED", "the engine has been closed; start a new one."));
    });
  }

  readonly limits: EngineLimits;
  readonly vocabSize: number;
  readonly modelName: string;
  readonly modelRoot: string;

  /** Starts the thread and waits until its model is loaded and its engine built. */
  static async start(
    source: ModelSource,
    options: EngineOptions,
    maxUnreadOutputs = MAX_UNREAD_OUTPUTS,
  ): Promise<EngineThread> {
    const data: EngineThreadData = { source, options };
    const worker = FROM_SOURCE
      ? // From sources, the thread registers tsx's loader before importing the worker module.
        new Worker(
          `import("tsx/esm/api").then((tsx) => { tsx.register(); return import(${JSON.stringify(WORKER_URL.href)}); });`,
          { eval: true, workerData: data },
        )
      : new Worker(WORKER_URL, { workerData: data });
    const ready = await new Promise<Extract<FromEngine, { type: "ready" }>>((resolve, reject) => {
      const onMessage = (m: FromEngine) => {
        if (m.type === "ready") resolve(m);
        else if (m.type === "load-failed") reject(fromThread(m.error));
      };
      worker.on("message", onMessage);
      worker.once("error", reject);
      worker.once("exit", (code) =>
        reject(
          new BringupError("ENGINE_THREAD_FAILED", `the engine thread exited (code ${code}) while loading.`),
        ),
      );
    }).finally(() => {
      worker.removeAllListeners("message").removeAllListeners("error").removeAllListeners("exit");
    });
    const tokenizer = new TextTokenizer(ready.tokenizerJson, ready.tokenizerConfig, {
      eosTokenIds: ready.eosTokenIds,
    });
    return new EngineThread(worker, ready, tokenizer, maxUnreadOutputs);
  }

  submit(
    request: GenerateRequest,
    seeds: readonly (number | bigint | undefined)[],
    signal: AbortSignal,
    onScheduled: (queueSeconds: number) => void,
    onTooSlow?: (error: unknown) => void,
  ): Promise<AsyncIterableIterator<StepOutput>[]> {
    if (this.closed)
      return Promise.reject(
        new BringupError("ENGINE_CLOSED", "the engine has been closed; start a new one."),
      );
    const ids = seeds.map(() => this.nextId++);
    signal.addEventListener(
      "abort",
      () => {
        for (const id of ids) this.send({ type: "abort", id });
      },
      { once: true },
    );
    const outputs = ids.map((id) => {
      const abort = () => this.send({ type: "abort", id });
      const stream = new OutputBuffer(this.maxUnreadOutputs, abort, onTooSlow);
      this.streams.set(id, stream);
      return stream;
    });
    this.onScheduled.set(ids[0] as number, onScheduled);
    return new Promise((accept, reject) => {
      this.pending.set(ids[0] as number, {
        accept: () => accept(outputs),
        reject: (error) => {
          for (const id of ids) this.streams.delete(id);
          this.onScheduled.delete(ids[0] as number);
          reject(error);
        },
      });
      this.send({ type: "submit", ids, request, seeds });
    });
  }

  stats(): EngineStats {
    return this.latest;
  }

  onStep(listener: (tokens: number) => void): void {
    this.stepListeners.push(listener);
  }

  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.send({ type: "close" });
    }
    await this.exited;
  }

  private send(message: ToEngine): void {
    this.worker.postMessage(message);
  }

  private receive(m: FromEngine): void {
    if (m.type === "stats") {
      this.latest = m.stats;
      for (const tokens of m.steps) for (const listener of this.stepListeners) listener(tokens);
      return;
    }
    if (!("id" in m)) return;
    if (m.type === "scheduled") {
      this.onScheduled.get(m.id)?.(m.queueSeconds);
      this.onScheduled.delete(m.id);
      return;
    }
    if (m.type === "accepted" || m.type === "rejected") {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.type === "accepted") p?.accept();
      else p?.reject(fromThread(m.error));
      return;
    }
    const stream = this.streams.get(m.id);
    if (stream === undefined) return;
    if (m.type === "output") {
      const { packed } = m;
      if (packed === undefined) this.inOrder(m.id, () => stream.push(m.output));
      // Rebuilt a slice per turn; the stream's later messages wait for it.
      else
        this.unpacking.set(
          m.id,
          (this.unpacking.get(m.id) ?? Promise.resolve()).then(async () =>
            stream.push({ ...m.output, promptLogprobs: await unpackPromptLogprobs(packed) }),
          ),
        );
    } else {
      this.streams.delete(m.id);
      this.onScheduled.delete(m.id);
      this.inOrder(m.id, () => {
        this.unpacking.delete(m.id);
        if (m.type === "end") stream.close();
        else stream.fail(fromThread(m.error));
      });
    }
  }

  /** Runs `deliver` now, or after the stream's prompt logprobs being rebuilt, keeping its order. */
  private inOrder(id: number, deliver: () => void): void {
    const before = this.unpacking.get(id);
    if (before === undefined) deliver();
    else this.unpacking.set(id, before.then(deliver));
  }

  private failAll(error: unknown): void {
    for (const p of this.pending.values()) p.reject(error);
    for (const s of this.streams.values()) s.fail(error);
    this.pending.clear();
    this.streams.clear();
    this.onScheduled.clear();
  }
}
