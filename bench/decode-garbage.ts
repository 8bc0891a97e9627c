/**
 * The garbage a decode leaves, as the benches report it: the process's garbage collections (a
 * PerformanceObserver kept from this module's import on), counted over spans of a run, and the
 * bytes a decode request allocates, per decode token and per request besides.
 */
import { constants, PerformanceObserver } from "node:perf_hooks";

/** The process's garbage collections as they come: start (performance.now() ms), pause, kind. */
const collections: { start: number; duration: number; full: boolean }[] = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const { kind } = (e as PerformanceEntry & { detail: { kind: number } }).detail;
    collections.push({
      start: e.startTime,
      duration: e.duration,
      full: kind === constants.NODE_PERFORMANCE_GC_MAJOR,
    });
  }
}).observe({ entryTypes: ["gc"] });

/** Whether a collection started inside [t0, t1] (performance.now() ms). */
const collectedWithin = (t0: number, t1: number) => collections.some((c) => c.start >= t0 && c.start <= t1);

/**
 * The collections that started inside `spans` (performance.now() ms): full ones and the rest, with
 * their pauses. Observers are told after the fact: await a turn of the event loop (setImmediate)
 * after the last span before asking.
 */
export function collectionsIn(spans: readonly (readonly [number, number])[]): string {
  const inside = collections.filter((c) => spans.some(([a, b]) => c.start >= a && c.start <= b));
  const [full, minor] = [inside.filter((c) => c.full), inside.filter((c) => !c.full)];
  const ms = (cs: typeof inside) => cs.reduce((s, c) => s + c.duration, 0).toFixed(1);
  return `${full.length} full (${ms(full)} ms), ${minor.length} other (${ms(minor)} ms)`;
}

/** Heap and ArrayBuffer bytes a request allocated. */
interface Allocated {
  readonly heap: number;
  readonly buffers: number;
}

/** A decode request of `tokens` tokens (after a prompt the caller holds). */
type Decode = (tokens: number) => Promise<unknown>;

/**
 * What `decode(tokens)` allocates: the growth of the heap's and the ArrayBuffers' bytes over the
 * request, taken again (up to five times) where a garbage collection started inside it (it would
 * hide what it freed); null where every try had one.
 */
async function allocatedBy(decode: Decode, tokens: number): Promise<Allocated | null> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const [t0, m0] = [performance.now(), process.memoryUsage()];
    await decode(tokens);
    const [m1, t1] = [process.memoryUsage(), performance.now()];
    await new Promise((resolve) => setImmediate(resolve));
    if (!collectedWithin(t0, t1))
      return { heap: m1.heapUsed - m0.heapUsed, buffers: m1.arrayBuffers - m0.arrayBuffers };
  }
  return null;
}

/**
 * Bytes `decode` allocates per decode token (the slope between requests of 8 and 8 + `tokens`
 * tokens) and per request besides (prefill, the request's own objects), heap and ArrayBuffers.
 */
export async function allocationOf(decode: Decode, tokens: number): Promise<string> {
  const [short, long] = [await allocatedBy(decode, 8), await allocatedBy(decode, 8 + tokens)];
  if (short === null || long === null) return "not measured (a collection fell inside every try)";
  const perToken = (key: keyof Allocated) => (long[key] - short[key]) / tokens;
  const perRequest = (key: keyof Allocated) => short[key] - 8 * perToken(key);
  const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
  return (
    `${kb(perToken("heap"))} heap, ${kb(perToken("buffers"))} ArrayBuffers per decode token; ` +
    `${kb(perRequest("heap"))} heap, ${kb(perRequest("buffers"))} ArrayBuffers per request besides`
  );
}
