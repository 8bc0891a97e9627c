import { writeFileAtomic } from "../src/common/atomic-write.js";
import type { TinyModelFiles } from "../src/engine/index.js";

/**
 * A minimal GGUF (v3) writer for f32 tensors and GGML's MXFP4 blocks, so llama.cpp can run the
 * very weights the engine runs. Hand-written: no maintained npm package writes GGUF.
 */

type Value =
  | { readonly t: "u32"; readonly v: number }
  | { readonly t: "f32"; readonly v: number }
  | { readonly t: "bool"; readonly v: boolean }
  | { readonly t: "str"; readonly v: string }
  | { readonly t: "strs"; readonly v: readonly string[] }
  | { readonly t: "i32s"; readonly v: readonly number[] };

export type GgufTensor = {
  readonly name: string;
  /** Dimensions in ggml order: innermost (row length) first. */
  readonly ne: readonly number[];
} & (
  | { readonly type?: "f32"; readonly data: Float32Array }
  /** GGML's block_mxfp4 (ggml-common.h): per 32 values an E8M0 byte, then 16 bytes of E2M1 codes. */
  | { readonly type: "mxfp4"; readonly data: Uint8Array }
);

const TYPE = { u32: 4, i32: 5, f32: 6, bool: 7, str: 8, arr: 9 } as const;
/** ggml_type codes (ggml.h). */
const GGML_TYPE = { f32: 0, mxfp4: 39 } as const;
/** Bytes of one block_mxfp4, which holds 32 values. */
export const GGML_MXFP4_BLOCK_BYTES = 17;
const ALIGN = 32;

class Bytes {
  private buf = new Uint8Array(1 << 16);
  private view = new DataView(this.buf.buffer);
  length = 0;

  private grow(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.length + n));
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  u32(v: number): void {
    this.grow(4);
    this.view.setUint32(this.length, v, true);
    this.length += 4;
  }

  i32(v: number): void {
    this.grow(4);
    this.view.setInt32(this.length, v, true);
    this.length += 4;
  }

  u64(v: number): void {
    this.grow(8);
    this.view.setBigUint64(this.length, BigInt(v), true);
    this.length += 8;
  }

  f32(v: number): void {
    this.grow(4);
    this.view.setFloat32(this.length, v, true);
    this.length += 4;
  }

  u8(v: number): void {
    this.grow(1);
    this.view.setUint8(this.length, v);
    this.length += 1;
  }

  str(s: string): void {
    const b = new TextEncoder().encode(s);
    this.u64(b.length);
    this.grow(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }

  pad(): void {
    while (this.length % ALIGN !== 0) this.u8(0);
  }

  bytes(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}

export async function writeGguf(
  path: string,
  kv: Readonly<Record<string, Value>>,
  tensors: readonly GgufTensor[],
): Promise<void> {
  const h = new Bytes();
  h.u32(0x46554747); // "GGUF"
  h.u32(3);
  h.u64(tensors.length);
  h.u64(Object.keys(kv).length);
  for (const [key, value] of Object.entries(kv)) {
    h.str(key);
    switch (value.t) {
      case "u32":
        h.u32(TYPE.u32);
        h.u32(value.v);
        break;
      case "f32":
        h.u32(TYPE.f32);
        h.f32(value.v);
        break;
      case "bool":
        h.u32(TYPE.bool);
        h.u8(value.v ? 1 : 0);
        break;
      case "str":
        h.u32(TYPE.str);
        h.str(value.v);
        break;
      case "strs":
        h.u32(TYPE.arr);
        h.u32(TYPE.str);
        h.u64(value.v.length);
        for (const s of value.v) h.str(s);
        break;
      case "i32s":
        h.u32(TYPE.arr);
        h.u32(TYPE.i32);
        h.u64(value.v.length);
        for (const n of value.v) h.i32(n);
        break;
    }
  }
  let offset = 0;
  const offsets: number[] = [];
  for (const t of tensors) {
    const values = t.ne.reduce((a, b) => a * b, 1);
    const bytes = t.type === "mxfp4" ? (values / 32) * GGML_MXFP4_BLOCK_BYTES : values * 4;
    if (t.data.byteLength !== bytes || (t.type === "mxfp4" && (t.ne[0] as number) % 32 !== 0))
      throw new Error(
        `GGUF tensor ${t.name}: ${t.data.byteLength} bytes do not hold [${t.ne}] ${t.type ?? "f32"}`,
      );
    h.str(t.name);
    h.u32(t.ne.length);
    for (const d of t.ne) h.u64(d);
    h.u32(GGML_TYPE[t.type ?? "f32"]);
    h.u64(offset);
    offsets.push(offset);
    offset += Math.ceil(t.data.byteLength / ALIGN) * ALIGN;
  }
  h.pad();
  const header = h.bytes();
  const out = new Uint8Array(header.length + offset);
  out.set(header);
  tensors.forEach((t, i) => {
    out.set(
      new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength),
      header.length + (offsets[i] as number),
    );
  });
  await writeFileAtomic(path, out);
}

export const gguf = {
  u32: (v: number): Value => ({ t: "u32", v }),
  f32: (v: number): Value => ({ t: "f32", v }),
  bool: (v: boolean): Value => ({ t: "bool", v }),
  str: (v: string): Value => ({ t: "str", v }),
  strs: (v: readonly string[]): Value => ({ t: "strs", v }),
  i32s: (v: readonly number[]): Value => ({ t: "i32s", v }),
};

/**
 * The GGUF tokenizer keys of a tiny model's byte-level BPE (llama.cpp's "gpt2" vocab type), its
 * added tokens marked as control tokens; no BOS is added, as the engine adds none.
 */
export function ggufBpeTokenizer(files: TinyModelFiles): Record<string, Value> {
  const model = files.tokenizerJson.model as { vocab: Record<string, number>; merges: [string, string][] };
  const added = files.tokenizerJson.added_tokens as { id: number; content: string }[];
  const tokens: string[] = [];
  const types: number[] = [];
  for (const [token, id] of Object.entries(model.vocab)) {
    tokens[id] = token;
    types[id] = 1;
  }
  for (const t of added) {
    tokens[t.id] = t.content;
    types[t.id] = 3;
  }
  const eosId = files.config.eos_token_id as number | number[];
  const eos = Array.isArray(eosId) ? (eosId[0] as number) : eosId;
  return {
    "tokenizer.ggml.model": gguf.str("gpt2"),
    "tokenizer.ggml.pre": gguf.str("gpt-2"),
    "tokenizer.ggml.tokens": gguf.strs(tokens),
    "tokenizer.ggml.token_type": gguf.i32s(types),
    "tokenizer.ggml.merges": gguf.strs(model.merges.map(([a, b]) => `${a} ${b}`)),
    "tokenizer.ggml.eos_token_id": gguf.u32(eos),
    "tokenizer.ggml.bos_token_id": gguf.u32(eos),
    "tokenizer.ggml.add_bos_token": gguf.bool(false),
  };
}
