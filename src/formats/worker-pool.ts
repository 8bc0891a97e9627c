import { createRequire } from "node:module";
import { availableParallelism, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { parentPort, Worker } from "node:worker_threads";
import type { ErrorCode } from "../common/error-catalogue.js";
import { BringupError, isBringupError } from "../common/errors.js";

export type WorkerRequest<J> = { id: number; job: J };
export type WorkerReply<R> =
  | { id: number; ok: true; result: R }
  | { id: number; ok: false; error: { code?: ErrorCode; message: string; subject?: string } };

/**
 * A fixed set of worker threads running one module. Jobs go to the least busy worker; results come
 * back as promises. When running from TypeScript sources (tests, tsx), the worker loads the module
 * through tsx; built JavaScript loads directly.
 */
export class WorkerPool<J, R> {
  readonly #workers: { worker: Worker; busy: number }[] = [];
  readonly #pending = new Map<number, { resolve: (result: R) => void; reject: (e: unknown) => void }>();
  #nextId = 0;
  #failure: unknown;

  constructor(entry: URL, size: number, workerData: unknown) {
    for (let i = 0; i < size; i += 1) {
      const worker = startWorker(entry, workerData);
      const slot = { worker, busy: 0 };
      worker.on("message", (reply: WorkerReply<R>) => {
        slot.busy -= 1;
        const pending = this.#pending.get(reply.id);
        this.#pending.delete(reply.id);
        if (pending === undefined) return;
        if (reply.ok) pending.resolve(reply.result);
        else
          pending.reject(
            new BringupError(reply.error.code ?? "WORKER_FAILED", reply.error.message, {
              subject: reply.error.subject,
            }),
          );
      });
      worker.on("error", (error) => this.#fail(error));
      worker.on("exit", (code) => {
        if (code !== 0)
          this.#fail(new BringupError("WORKER_FAILED", `a conversion worker exited with code ${code}.`));
      });
      this.#workers.push(slot);
    }
  }

  /** Runs a job on the least busy worker. */
  run(job: J): Promise<R> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const slot = this.#workers.reduce((a, b) => (b.busy < a.busy ? b : a));
    const id = this.#nextId++;
    slot.busy += 1;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      slot.worker.postMessage({ id, job } satisfies WorkerRequest<J>);
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.#workers.map(({ worker }) => worker.terminate()));
  }

  #fail(error: unknown): void {
    this.#failure ??= error;
    for (const { reject } of this.#pending.values()) reject(error);
    this.#pending.clear();
  }
}

/**
 * In a worker thread: runs each job a WorkerPool sends, one after another in arrival order (the pool
 * keeps the next one queued here), and replies with its result or its error.
 */
export function serveJobs<J, R>(run: (job: J) => Promise<R>): void {
  let queue: Promise<void> = Promise.resolve();
  parentPort?.on("message", ({ id, job }: WorkerRequest<J>) => {
    queue = queue.then(async () => {
      let reply: WorkerReply<R>;
      try {
        reply = { id, ok: true, result: await run(job) };
      } catch (error) {
        reply = {
          id,
          ok: false,
          error: isBringupError(error)
            ? { code: error.code, message: error.message, subject: error.subject }
            : { message: error instanceof Error ? error.message : String(error) },
        };
      }
      parentPort?.postMessage(reply);
    });
  });
}

/** The worker module `name` beside the module at `base` (its import.meta.url): .ts from sources, .js built. */
export function siblingModule(name: string, base: string): URL {
  return new URL(`./${name}${base.endsWith(".ts") ? ".ts" : ".js"}`, base);
}

function startWorker(entry: URL, workerData: unknown): Worker {
  if (!entry.pathname.endsWith(".ts")) return new Worker(entry, { workerData });
  // Node 20 cannot load TypeScript itself; tsx's tsImport loads the module with its loader in place.
  const tsxRoot = dirname(createRequire(import.meta.url).resolve("tsx/package.json"));
  const api = pathToFileURL(join(tsxRoot, "dist/esm/api/index.mjs")).href;
  const bootstrap = `import(${JSON.stringify(api)}).then((api) => api.tsImport(${JSON.stringify(entry.href)}, ${JSON.stringify(entry.href)}))`;
  return new Worker(bootstrap, { eval: true, workerData });
}

/**
 * Worker threads when the caller does not say: two where about two cores are idle, else one.
 * bench/weights-convert.ts, unpinned on a 2-core machine at load 8, found convert + verify with two
 * workers no faster than with one (1.01x and 0.93x over two ABBA runs) for 15-20% more CPU, while
 * the earlier bench found two cores 1.33-1.55x faster than one on a quiet host: a second worker pays
 * only on a core with nothing else to do.
 */
export function defaultWorkers(): number {
  return Math.round(availableParallelism() - (loadavg()[0] ?? 0)) >= 2 ? 2 : 1;
}
