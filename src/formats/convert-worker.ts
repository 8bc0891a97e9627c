import { workerData } from "node:worker_threads";
import { type Checkpoint, openCheckpoint } from "./checkpoint.js";
import { type ConvertTask, type JobOutcome, runJob, Scratch } from "./convert-jobs.js";
import { serveJobs } from "./worker-pool.js";

// Each worker opens the source checkpoint itself, reads the rows of its jobs by byte range and writes
// their parts in place; blocking I/O keeps each piece in this core's cache from read to write.
const source = (workerData as { source: string }).source;
let opened: Promise<Checkpoint> | undefined;
const scratch = new Scratch();

serveJobs<ConvertTask, JobOutcome>(async ({ job, target }) => {
  opened ??= openCheckpoint(source, { blockingReads: true });
  return runJob(await opened, job, target, scratch);
});
