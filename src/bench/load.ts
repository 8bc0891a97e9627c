import { BringupError } from "../common/errors.js";
import { seededRandom } from "./stats.js";

/** How requests arrive: all at once (rate Infinity) or open-loop at a mean rate, within a concurrency cap. */
export interface LoadShape {
  /** Requests per second; Infinity sends every request at time zero (vLLM's default). */
  readonly requestRate: number;
  /** Gamma shape of the inter-arrival times: 1 is Poisson, below 1 burstier, above 1 steadier. */
  readonly burstiness: number;
  /** Most requests in flight at once; undefined is no cap. */
  readonly maxConcurrency?: number;
  readonly seed: number;
}

/** Offsets (ms from the start) at which each request is due, seeded. */
export function arrivalOffsets(count: number, shape: LoadShape): number[] {
  if (!(shape.requestRate > 0)) {
    throw new BringupError("BENCH_RATE_INVALID", `request rate must be above 0, got ${shape.requestRate}.`);
  }
  if (!(shape.burstiness > 0) || !Number.isFinite(shape.burstiness)) {
    throw new BringupError(
      "BENCH_BURSTINESS_INVALID",
      `burstiness must be above 0, got ${shape.burstiness}.`,
    );
  }
  if (!Number.isFinite(shape.requestRate)) return new Array<number>(count).fill(0);
  const random = seededRandom(shape.seed);
  // Mean gap 1/rate: a gamma with shape k and scale 1/(rate*k), as vLLM draws it.
  const scaleMs = 1000 / (shape.requestRate * shape.burstiness);
  const offsets: number[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    offsets.push(at);
    at += gamma(random, shape.burstiness) * scaleMs;
  }
  return offsets;
}

/**
 * A gamma variate (Marsaglia and Tsang, with the U^(1/k) boost below shape 1): no maintained npm
 * package draws gamma variates from a seeded source.
 */
function gamma(random: () => number, shape: number): number {
  if (shape < 1) return gamma(random, shape + 1) * (1 - random()) ** (1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = normal(random);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = 1 - random();
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}

function normal(random: () => number): number {
  const u = 1 - random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

/**
 * Runs `send` for requests 0..count-1, each at its scheduled time and within the concurrency cap.
 * With a request rate, `send` gets the scheduled time so latency counts from it even when a slot
 * was late (no coordinated omission); without one, the time its slot came free.
 */
export async function runLoad<R>(
  count: number,
  shape: LoadShape,
  send: (index: number, scheduledAt: number) => Promise<R>,
  options: { signal?: AbortSignal; onResult?: (result: R) => void } = {},
): Promise<R[]> {
  const cap = shape.maxConcurrency;
  if (cap !== undefined && (!Number.isInteger(cap) || cap < 1)) {
    throw new BringupError(
      "BENCH_CONCURRENCY_INVALID",
      `max concurrency must be a positive integer, got ${cap}.`,
    );
  }
  const offsets = arrivalOffsets(count, shape);
  const start = performance.now();
  const results: R[] = [];
  let inFlight = 0;
  const waiting: (() => void)[] = [];
  const acquire = async () => {
    if (cap === undefined || inFlight < cap) {
      inFlight++;
      return;
    }
    await new Promise<void>((resolve) => waiting.push(resolve));
  };
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else inFlight--;
  };
  const tasks: Promise<void>[] = [];
  for (let index = 0; index < count; index++) {
    if (options.signal?.aborted) break;
    const scheduledAt = start + (offsets[index] ?? 0);
    const wait = scheduledAt - performance.now();
    if (wait > 0) await sleep(wait);
    await acquire();
    if (options.signal?.aborted) {
      release();
      break;
    }
    // A closed loop (no rate) times each request from when its slot freed; an open loop from its schedule.
    const due = Number.isFinite(shape.requestRate) ? scheduledAt : performance.now();
    tasks.push(
      send(index, due).then(
        (result) => {
          results.push(result);
          options.onResult?.(result);
          release();
        },
        (error: unknown) => {
          release();
          throw error;
        },
      ),
    );
  }
  await Promise.all(tasks);
  return results;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
