import { BringupError } from "../common/errors.js";
import type { StepOutput } from "../engine/index.js";

/**
 * Step outputs a client has not read yet. A client that stops reading holds socket buffers (which
 * apply backpressure) and then this queue; past `limit` unread outputs the request is aborted, so
 * its KV blocks go back and its memory stops growing.
 */
export class OutputBuffer implements AsyncIterableIterator<StepOutput> {
  private readonly items: StepOutput[] = [];
  private waiter:
    | { resolve: (r: IteratorResult<StepOutput>) => void; reject: (e: unknown) => void }
    | undefined;
  private done = false;
  private error: unknown;

  constructor(
    private readonly limit: number,
    /** Stops the request in the engine (the client left or fell too far behind). */
    private readonly abort: () => void,
  ) {}

  push(item: StepOutput): void {
    if (this.done) return;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w.resolve({ value: item, done: false });
      return;
    }
    this.items.push(item);
    if (this.items.length > this.limit) {
      this.fail(
        new BringupError(
          "CLIENT_TOO_SLOW",
          `the client left ${this.limit} outputs unread, so the request was aborted; read the stream as it arrives.`,
        ),
      );
      this.abort();
    }
  }

  close(): void {
    if (this.done) return;
    this.done = true;
    if (this.waiter && this.items.length === 0) {
      const w = this.waiter;
      this.waiter = undefined;
      w.resolve({ value: undefined, done: true });
    }
  }

  fail(error: unknown): void {
    if (this.done) return;
    this.done = true;
    this.error = error;
    this.items.length = 0;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w.reject(error);
    }
  }

  next(): Promise<IteratorResult<StepOutput>> {
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve({ value: item, done: false });
    if (this.error !== undefined) return Promise.reject(this.error);
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  /** The reader stopped (break or throw in for-await): the request is aborted. */
  return(): Promise<IteratorResult<StepOutput>> {
    if (!this.done) this.abort();
    this.done = true;
    this.items.length = 0;
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<StepOutput> {
    return this;
  }
}
