import { parentPort, workerData } from "node:worker_threads";
import { isBringupError } from "../common/errors.js";
import { type Checkpoint, openCheckpoint } from "./checkpoint.js";
import { type ConvertTask, type JobOutcome, runJob, Scratch } from "./convert-jobs.js";
import type { WorkerReply, WorkerRequest } from "./worker-pool.js";

// Each worker opens the source checkpoint itself, reads the rows of its jobs by byte range and writes
// their parts in place; blocking I/O keeps each piece in this core's cache from read to write.
const source = (workerData as { source: string }).source;
let opened: Promise<Checkpoint> | undefined;
const scratch = new Scratch();

// Jobs run one after another in arrival order; the pool keeps the next one queued here.
let queue: Promise<void> = Promise.resolve();
parentPort?.on("message", ({ id, job: task }: WorkerRequest<ConvertTask>) => {
  opened ??= openCheckpoint(source, { blockingReads: true });
  const checkpoint = opened;
  queue = queue.then(() => handle(id, checkpoint, task));
});

async function handle(id: number, checkpoint: Promise<Checkpoint>, task: ConvertTask): Promise<void> {
  let reply: WorkerReply<JobOutcome>;
  try {
    reply = { id, ok: true, result: await runJob(await checkpoint, task.job, task.target, scratch) };
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
}
