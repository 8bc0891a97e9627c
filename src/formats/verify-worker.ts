import { workerData } from "node:worker_threads";
import { type Checkpoint, openCheckpoint } from "./checkpoint.js";
import { compareRows, type RowsComparison, type RowsJob } from "./verify.js";
import { serveJobs } from "./worker-pool.js";

// Each worker opens both checkpoints itself and decodes the rows of its jobs by byte range.
const paths = workerData as { a: string; b: string };
let opened: Promise<Checkpoint[]> | undefined;

serveJobs<RowsJob, RowsComparison>(async (job) => {
  opened ??= Promise.all([paths.a, paths.b].map((path) => openCheckpoint(path, { blockingReads: true })));
  const [x, y] = (await opened) as [Checkpoint, Checkpoint];
  return compareRows(x, y, job);
});
