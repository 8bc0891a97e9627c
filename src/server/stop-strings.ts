/**
 * Watches generated text for stop strings as it grows. Text is released as soon as it can no
 * longer be the start of a stop string (vLLM holds back the longest stop string's length minus one
 * character the same way), and a matched stop string is cut from the output with what follows it.
 */
export class StopStringMatcher {
  private text = "";
  private released = 0;
  private readonly holdBack: number;

  constructor(private readonly stops: readonly string[]) {
    this.holdBack = stops.reduce((m, s) => Math.max(m, s.length - 1), 0);
  }

  /** All text kept so far (cut at the stop string once one matched). */
  get output(): string {
    return this.text;
  }

  /** Adds newly decoded text; returns what may be sent now and the stop string it ran into, if any. */
  push(delta: string): { readonly text: string; readonly stop?: string } {
    const before = this.text.length;
    this.text += delta;
    let cut = -1;
    let matched: string | undefined;
    for (const stop of this.stops) {
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
    return { text: this.release(this.text.length - this.holdBack) };
  }

  /** Whatever was held back, at the end of the stream. */
  flush(): string {
    return this.release(this.text.length);
  }

  private release(upTo: number): string {
    let end = upTo;
    // Never split a surrogate pair between two deltas.
    if (end > this.released && end < this.text.length) {
      const code = this.text.charCodeAt(end - 1);
      if (code >= 0xd800 && code <= 0xdbff) end--;
    }
    if (end <= this.released) return "";
    const out = this.text.slice(this.released, end);
    this.released = end;
    return out;
  }
}
