/**
 * Watches generated text for stop strings as it grows. Text is released as soon as it can no
 * longer be the start of a stop string (only a tail that begins some stop string is held back),
 * and a matched stop string is cut from the output with what follows it.
 */
export class StopStringMatcher {
  private text = "";
  private released = 0;

  constructor(private readonly stops: readonly string[]) {}

  /** All text kept so far (cut at the stop string once one matched). */
  get output(): string {
    return this.text;
  }

  /**
   * Adds newly decoded text; returns what may be sent now and the stop string it ran into, if any.
   * With `match` false (vLLM: before min_tokens) no stop string ends the text, and one that ended in
   * this text will not end it later either.
   */
  push(delta: string, match = true): { readonly text: string; readonly stop?: string } {
    const before = this.text.length;
    this.text += delta;
    let cut = -1;
    let matched: string | undefined;
    for (const stop of match ? this.stops : []) {
      // A match must end in the new text; earlier positions were checked on earlier pushes.
      const at = this.text.indexOf(stop, Math.max(0, before - stop.length + 1));
      if (at >= 0 && (cut < 0 || at < cut)) {
        cut = at;
        matched = stop;
      }
    }
    if (matched !== undefined) {
      this.text = this.text.slice(0, cut);
      return { text: this.release(this.text.length), stop: matched };
    }
    return { text: this.release(this.text.length - this.pendingPrefix()) };
  }

  /** The length of the longest tail of the text that is the start of a stop string. */
  private pendingPrefix(): number {
    let longest = 0;
    for (const stop of this.stops) {
      for (let k = Math.min(stop.length - 1, this.text.length); k > longest; k--) {
        if (this.text.endsWith(stop.slice(0, k))) {
          longest = k;
          break;
        }
      }
    }
    return longest;
  }

  /** Whatever was held back, at the end of the stream. */
  flush(): string {
    return this.release(this.text.length);
  }

  private release(upTo: number): string {
    if (upTo <= this.released) return "";
    const out = this.text.slice(this.released, upTo);
    this.released = upTo;
    return out;
  }
}
