/** An unbounded single-consumer async queue: the engine pushes, one `for await` reads. */
export class OutputQueue<T> implements AsyncIterableIterator<T> {
  private readonly items: T[] = [];
  private waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | undefined;
  private done = false;
  private error: unknown;
  private failed = false;

  constructor(private readonly onReturn: () => void) {}

  /** Items pushed and not yet read. */
  get unread(): number {
    return this.items.length;
  }

  push(item: T): void {
    if (this.done) return;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w.resolve({ value: item, done: false });
    } else this.items.push(item);
  }

  close(): void {
    this.done = true;
    if (this.waiter && this.items.length === 0) {
      const w = this.waiter;
      this.waiter = undefined;
      w.resolve({ value: undefined, done: true });
    }
  }

  fail(error: unknown): void {
    this.failed = true;
    this.error = error;
    this.done = true;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w.reject(error);
    }
  }

  next(): Promise<IteratorResult<T>> {
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve({ value: item, done: false });
    if (this.failed) return Promise.reject(this.error);
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  /** The consumer stopped reading (break or throw in for-await): the request is aborted. */
  return(): Promise<IteratorResult<T>> {
    if (!this.done) this.onReturn();
    this.done = true;
    this.items.length = 0;
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}
