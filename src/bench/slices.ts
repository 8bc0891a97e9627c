/** Work that was put off: `run` is called once for each time it was deferred, in order, and must not throw. */
export interface Deferred {
  /** Does the work; true when it settled a promise, whose reactions run right after the slice. */
  run(): boolean;
}

/**
 * Runs deferred work in short slices with the event loop's I/O polls in between. A load generator
 * stamps each read in the callback that delivers it and defers the parsing here, so a first token
 * that lands while hundreds of other reads wait to be parsed is stamped within one slice, not after
 * all of them. A slice ends after `sliceMs` or after `maxSettled` items settled promises (each
 * settled request sends the next one right after the slice, which the clock here does not see).
 */
export class SliceQueue {
  private items: Deferred[] = [];
  private head = 0;
  private scheduled = false;

  constructor(
    private readonly sliceMs: number,
    private readonly maxSettled: number,
  ) {}

  /** Items waiting to run. */
  get length(): number {
    return this.items.length - this.head;
  }

  defer(item: Deferred): void {
    this.items.push(item);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.drain);
    }
  }

  private readonly drain = (): void => {
    const until = performance.now() + this.sliceMs;
    let settled = 0;
    try {
      while (this.head < this.items.length) {
        const item = this.items[this.head];
        this.items[this.head++] = DONE;
        if (item?.run() && ++settled >= this.maxSettled) break;
        if (performance.now() >= until) break;
      }
    } finally {
      if (this.head < this.items.length) {
        // A setImmediate queued from inside the check phase runs after the next poll for I/O.
        setImmediate(this.drain);
        if (this.head > 1024 && this.head * 2 > this.items.length) {
          this.items = this.items.slice(this.head);
          this.head = 0;
        }
      } else {
        this.items = [];
        this.head = 0;
        this.scheduled = false;
      }
    }
  };
}

/** Stands in for a run item so the queue does not keep it alive. */
const DONE: Deferred = { run: () => false };
