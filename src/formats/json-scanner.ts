/**
 * A reader of JSON text token by token, by the rules serde_json applies when the safetensors crate
 * reads a header (huggingface/safetensors, safetensors/src/tensor.rs, `SafeTensors::read_metadata`):
 * RFC 8259 syntax with no byte-order mark, whitespace of space, tab, CR and LF only, at most 127
 * nested arrays and objects, strings of valid UTF-8 whose \u escapes pair their surrogates, and
 * numbers kept as written so an integer is told from `64.0`. It builds nothing the caller does not
 * ask for, so a header costs memory for what it holds, not for its size, and strings longer than a
 * limit are refused before they are made.
 */
export class JsonScanner {
  #at = 0;
  #depth = 0;

  constructor(
    private readonly bytes: Uint8Array,
    /** Called with what is wrong and the byte offset; it throws. */
    private readonly fail: (what: string, at: number) => never,
  ) {}

  get position(): number {
    return this.#at;
  }

  /** Skips whitespace and returns the next byte without taking it (-1 at the end). */
  peek(): number {
    const b = this.bytes;
    let i = this.#at;
    while (i < b.length && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i += 1;
    this.#at = i;
    return i < b.length ? (b[i] as number) : -1;
  }

  /** Takes `char` (after whitespace) or fails saying what was expected. */
  expect(char: string, what = `\`${char}\``): void {
    if (this.peek() !== char.charCodeAt(0)) this.fail(`expected ${what}`, this.#at);
    this.#at += 1;
  }

  /** Takes `char` if it comes next. */
  take(char: string): boolean {
    if (this.peek() !== char.charCodeAt(0)) return false;
    this.#at += 1;
    return true;
  }

  /** Enters an array or object, counting its depth as serde_json's recursion limit does. */
  open(char: "{" | "["): void {
    this.expect(char);
    this.#depth += 1;
    // serde_json counts down from 128 and fails on reaching 0: 127 levels are allowed.
    if (this.#depth > 127) this.fail("nesting deeper than 127 arrays and objects", this.#at);
  }

  close(char: "}" | "]"): void {
    this.expect(char);
    this.#depth -= 1;
  }

  /**
   * Members of an object or elements of an array, one call of `each` per item (for an object, after
   * its key is read and the colon taken), with the commas between them.
   */
  items(kind: "{" | "[", each: (key: string) => void, maxKeyBytes = Number.POSITIVE_INFINITY): void {
    const end = kind === "{" ? "}" : "]";
    this.open(kind);
    if (this.take(end)) {
      this.#depth -= 1;
      return;
    }
    do {
      let key = "";
      if (kind === "{") {
        if (this.peek() !== 0x22) this.fail("expected a string key", this.#at);
        key = this.string(maxKeyBytes);
        this.expect(":");
      }
      each(key);
    } while (this.take(","));
    this.close(end);
  }

  /** The end of the text: nothing but whitespace may follow. */
  end(): void {
    if (this.peek() !== -1) this.fail("unexpected text after the JSON value", this.#at);
  }

  /** A string, unescaped; one whose UTF-8 is longer than `maxBytes` is refused before it is made. */
  string(maxBytes = Number.POSITIVE_INFINITY): string {
    const b = this.bytes;
    this.expect('"', "a string");
    const start = this.#at;
    let plain = true;
    let i = start;
    for (; i < b.length && b[i] !== 0x22; i += 1) {
      const c = b[i] as number;
      if (c < 0x20) this.fail("a control character inside a string (escape it)", i);
      if (c === 0x5c) {
        plain = false;
        i += 1;
      } else if (c >= 0x80) plain = false;
      if (i - start >= maxBytes) this.fail(`a string longer than ${maxBytes} bytes`, start);
    }
    if (i >= b.length) this.fail("a string that is never closed", start);
    this.#at = i + 1;
    if (plain) return latin1.decode(b.subarray(start, i));
    return this.#unescape(start, i);
  }

  #unescape(start: number, stop: number): string {
    const b = this.bytes;
    let out = "";
    let run = start;
    for (let i = start; i < stop; ) {
      if (b[i] !== 0x5c) {
        i += 1;
        continue;
      }
      out += this.#utf8(run, i);
      const e = b[i + 1] as number;
      const simple = ESCAPES[e];
      if (simple !== undefined) {
        out += simple;
        i += 2;
      } else if (e === 0x75) {
        const unit = this.#hex(i + 2, stop);
        if (unit >= 0xdc00 && unit <= 0xdfff) this.fail("a lone trailing surrogate in a \\u escape", i);
        if (unit >= 0xd800 && unit <= 0xdbff) {
          const low = b[i + 6] === 0x5c && b[i + 7] === 0x75 ? this.#hex(i + 8, stop) : -1;
          if (!(low >= 0xdc00 && low <= 0xdfff)) this.fail("a lone leading surrogate in a \\u escape", i);
          out += String.fromCharCode(unit, low);
          i += 12;
        } else {
          out += String.fromCharCode(unit);
          i += 6;
        }
      } else {
        this.fail("an invalid escape in a string", i);
      }
      run = i;
    }
    return out + this.#utf8(run, stop);
  }

  #utf8(from: number, to: number): string {
    if (from === to) return "";
    try {
      return utf8.decode(this.bytes.subarray(from, to));
    } catch {
      this.fail("bytes that are not valid UTF-8", from);
    }
  }

  #hex(at: number, stop: number): number {
    if (at + 4 > stop) this.fail("a \\u escape without four hex digits", at);
    let value = 0;
    for (let k = at; k < at + 4; k += 1) {
      const digit = HEX.indexOf(String.fromCharCode(this.bytes[k] as number).toLowerCase());
      if (digit < 0) this.fail("a \\u escape without four hex digits", at);
      value = value * 16 + digit;
    }
    return value;
  }

  /**
   * A number as written: its text and whether it is a plain non-negative integer (digits only, no
   * sign, fraction or exponent), the only numbers serde_json gives an unsigned integer field.
   */
  number(): { text: string; unsigned: boolean } {
    const b = this.bytes;
    this.peek();
    const start = this.#at;
    let i = start;
    const digits = () => {
      const from = i;
      while (i < b.length && (b[i] as number) >= 0x30 && (b[i] as number) <= 0x39) i += 1;
      return i - from;
    };
    const negative = b[i] === 0x2d;
    if (negative) i += 1;
    const first = b[i];
    const whole = digits();
    if (whole === 0 || (first === 0x30 && whole > 1)) this.fail("an invalid number", start);
    let fraction = false;
    if (b[i] === 0x2e) {
      i += 1;
      fraction = true;
      if (digits() === 0) this.fail("an invalid number", start);
    }
    if (b[i] === 0x65 || b[i] === 0x45) {
      i += 1;
      fraction = true;
      if (b[i] === 0x2b || b[i] === 0x2d) i += 1;
      if (digits() === 0) this.fail("an invalid number", start);
    }
    this.#at = i;
    return { text: latin1.decode(b.subarray(start, i)), unsigned: !negative && !fraction };
  }

  /** Reads and discards any value, checking it as strictly as a value that is kept. */
  skip(): void {
    const c = this.peek();
    if (c === 0x7b) this.items("{", () => this.skip());
    else if (c === 0x5b) this.items("[", () => this.skip());
    else if (c === 0x22) this.string();
    else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) this.number();
    else if (!this.literal()) this.fail("expected a value", this.#at);
  }

  /** Takes `true`, `false` or `null` if one comes next, returning whether one did. */
  literal(word?: "null"): boolean {
    this.peek();
    for (const w of word === undefined ? LITERALS : [word]) {
      if (latin1.decode(this.bytes.subarray(this.#at, this.#at + w.length)) === w) {
        this.#at += w.length;
        return true;
      }
    }
    return false;
  }
}

const latin1 = new TextDecoder("latin1");
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const HEX = "0123456789abcdef";
const LITERALS = ["true", "false", "null"] as const;
const ESCAPES: Record<number, string> = {
  34: '"',
  92: "\\",
  47: "/",
  98: "\b",
  102: "\f",
  110: "\n",
  114: "\r",
  116: "\t",
};
