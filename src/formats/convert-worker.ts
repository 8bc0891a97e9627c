import { parentPort, workerData } from "node:worker_threads";
import { isBringupError } from "../common/errors.js";
import { type Checkpoint, openCheckpoint } from "./checkpoint.js";
import { type Job, type JobResult, type LoadedJob, loadJob, Scratch } from "./convert-jobs.js";
import type { WorkerReply, WorkerRequest } from "./worker-pool.js";

// Each worker opens the source checkpoint itself and reads the rows of its jobs by byte range.
const source = (workerData as { source: string }).source;
let opened: Promise<Checkpoint> | undefined;
const scratch = new Scratch();

// A job's source is read as soon as it arrives, and jobs convert one after another in arrival
// order: the pool keeps a second job here, so its reads overlap this one's conversion and the
// worker never waits for the main thread.
let queue: Promise<void> = Promise.resolve();
parentPort?.on("message", (request: WorkerRequest<Job>) => {
  if ("recycle" in request) {
    for (const offset of request.recycle) scratch.give(offset);
    return;
  }
  opened ??= openCheckpoint(source);
  const loading = opened.then((ck) => loadJob(ck, request.job, scratch));
  loading.catch(() => undefined); // reported in order below; no unhandled rejection meanwhile
  queue = queue.then(() => handle(request.id, loading));
});

async function handle(id: number, loading: Promise<LoadedJob>): Promise<void> {
  let reply: WorkerReply<JobResult>;
  const transfer: ArrayBuffer[] = [];
  try {
    const result = await (await loading).run();
    // Views of the shared arena cross as they are; other parts are fresh arrays, whose buffers
    // move (each once: some parts may share one).
    for (const part of result.parts) {
      const buffer = part.buffer;
      if (!(buffer instanceof SharedArrayBuffer) && !transfer.includes(buffer)) transfer.push(buffer);
    }
    reply = { id, ok: true, result };
  } catch (error) {
    reply = {
      id,
      ok: false,
      error: isBringupError(error)
        ? { code: error.code, message: error.message, subject: error.subject }
        : { message: error instanceof Error ? error.message : String(error) },
    };
  }
  parentPort?.postMessage(reply, transfer);
}
