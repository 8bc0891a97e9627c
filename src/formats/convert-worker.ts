import { parentPort, workerData } from "node:worker_threads";
import { isBringupError } from "../common/errors.js";
import { type Checkpoint, openCheckpoint } from "./checkpoint.js";
import { type Job, type JobResult, runJob, Scratch } from "./convert-jobs.js";
import type { WorkerReply, WorkerRequest } from "./worker-pool.js";

// Each worker opens the source checkpoint itself and reads the rows of its jobs by byte range.
const source = (workerData as { source: string }).source;
let opened: Promise<Checkpoint> | undefined;
const scratch = new Scratch();

// Jobs run one after another: they share the scratch buffers, and the pool keeps a second job queued
// here so the worker never waits for the main thread.
let queue: Promise<void> = Promise.resolve();
parentPort?.on("message", (request: WorkerRequest<Job>) => {
  if ("recycle" in request) {
    for (const offset of request.recycle) scratch.give(offset);
    return;
  }
  queue = queue.then(() => handle(request.id, request.job));
});

async function handle(id: number, job: Job): Promise<void> {
  let reply: WorkerReply<JobResult>;
  const transfer: ArrayBuffer[] = [];
  try {
    opened ??= openCheckpoint(source);
    const result = await runJob(await opened, job, scratch);
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
