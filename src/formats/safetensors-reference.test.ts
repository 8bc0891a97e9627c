import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isBringupError } from "../common/errors.js";
import { DTYPE_BYTES } from "./dtypes.js";
import { detectLogicalTensors } from "./logical.js";
import { openSafetensors } from "./safetensors-reader.js";

/*
 * The reader held against the reference safetensors library on a generated corpus. The reference's
 * rules are written out below from huggingface/safetensors, safetensors/src/tensor.rs
 * (`SafeTensors::read_metadata`, `HashMetadata`, `TensorInfo`, `Metadata::validate`) and the
 * serde_json rules it reads the header with; they were checked by hand against the Python package
 * safetensors 0.8.0 (`safe_open`) on this corpus. The reader may refuse where the reference accepts
 * only for this project's rules about names: MXFP4 pairing (`*_blocks` U8 beside its `*_scales`)
 * and control characters in a tensor name. Dtypes that the reference knows and this project cannot
 * read (F4, F6_*, C64, ...) are not generated.
 */

type Json =
  | { kind: "object"; pairs: [string, Json][] }
  | { kind: "array"; items: Json[] }
  | { kind: "string"; value: string }
  | { kind: "number"; text: string }
  | { kind: "literal"; value: true | false | null };

const TOKEN =
  /[ \t\n\r]*(?:([{}[\],:])|("(?:[^"\\]|\\.)*")|(-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)|(true|false|null))/y;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** serde_json's reading of a text into a tree that keeps repeated keys and numbers as written. */
function parseJson(text: string): Json {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    const at = TOKEN.lastIndex;
    const m = TOKEN.exec(text);
    if (m === null) {
      if (/^[ \t\n\r]*$/.test(text.slice(at))) break;
      throw new Error(`bad token at ${at}`);
    }
    tokens.push(m[0].replace(/^[ \t\n\r]+/, ""));
  }
  let k = 0;
  const value = (depth: number): Json => {
    if (depth > 127) throw new Error("recursion limit"); // serde_json's 128, counted down to 0
    const t = tokens[k++];
    if (t === undefined) throw new Error("eof");
    if (t === "{" || t === "[") {
      const close = t === "{" ? "}" : "]";
      const pairs: [string, Json][] = [];
      const items: Json[] = [];
      if (tokens[k] === close) k += 1;
      else {
        for (;;) {
          if (t === "{") {
            const key = value(depth + 1);
            if (key.kind !== "string" || tokens[k++] !== ":") throw new Error("key");
            pairs.push([key.value, value(depth + 1)]);
          } else items.push(value(depth + 1));
          const sep = tokens[k++];
          if (sep === close) break;
          if (sep !== ",") throw new Error("separator");
        }
      }
      return t === "{" ? { kind: "object", pairs } : { kind: "array", items };
    }
    if (t.startsWith('"')) {
      const s = JSON.parse(t) as string; // refuses raw control characters and unknown escapes
      if (LONE_SURROGATE.test(s)) throw new Error("lone surrogate");
      return { kind: "string", value: s };
    }
    if (t === "true" || t === "false" || t === "null")
      return { kind: "literal", value: t === "null" ? null : t === "true" };
    if (/^[-\d]/.test(t)) return { kind: "number", text: t };
    throw new Error(`unexpected ${t}`);
  };
  const root = value(1);
  if (k !== tokens.length) throw new Error("trailing characters");
  return root;
}

const U64 = 2n ** 64n;

/** serde's usize: an integer token of digits only, below 2^64. */
function usize(v: Json | undefined): bigint {
  if (v?.kind !== "number" || !/^\d+$/.test(v.text) || BigInt(v.text) >= U64) throw new Error("usize");
  return BigInt(v.text);
}

/** Whether the reference library opens the file (safetensors 0.8.0, dtypes limited as said above). */
function referenceAccepts(file: Uint8Array): boolean {
  try {
    if (file.length < 8) return false;
    const n = new DataView(file.buffer, file.byteOffset).getBigUint64(0, true);
    if (n > 100_000_000n || 8n + n > BigInt(file.length)) return false;
    const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(
      file.subarray(8, 8 + Number(n)),
    );
    const root = parseJson(text);
    if (root.kind !== "object") return false;
    const tensors = new Map<string, { size: number; shape: bigint[]; offsets: [bigint, bigint] }>();
    let metadataSeen = false;
    for (const [key, value] of root.pairs) {
      if (key === "__metadata__") {
        if (metadataSeen) return false; // duplicate field
        metadataSeen = true;
        if (value.kind === "literal" && value.value === null) continue;
        if (value.kind !== "object" || value.pairs.some(([, v]) => v.kind !== "string")) return false;
        continue;
      }
      // TensorInfo: a struct, from a map (unknown fields ignored, none repeated) or a 3-sequence.
      let fields: [string, Json][];
      if (value.kind === "array") {
        if (value.items.length !== 3) return false;
        fields = value.items.map((v, i) => [["dtype", "shape", "data_offsets"][i] as string, v]);
      } else if (value.kind === "object") fields = value.pairs;
      else return false;
      const known = new Map<string, Json>();
      for (const [f, v] of fields) {
        if (f !== "dtype" && f !== "shape" && f !== "data_offsets") continue;
        if (known.has(f)) return false;
        known.set(f, v);
      }
      const dtype = known.get("dtype");
      const shape = known.get("shape");
      const offsets = known.get("data_offsets");
      if (dtype === undefined || shape === undefined || offsets === undefined) return false;
      // A unit enum variant: "NAME", or {"NAME": null}.
      const name =
        dtype.kind === "string"
          ? dtype.value
          : dtype.kind === "object" &&
              dtype.pairs.length === 1 &&
              dtype.pairs[0]?.[1].kind === "literal" &&
              dtype.pairs[0][1].value === null
            ? dtype.pairs[0][0]
            : undefined;
      if (name === undefined || !Object.hasOwn(DTYPE_BYTES, name)) return false;
      if (shape.kind !== "array" || offsets.kind !== "array" || offsets.items.length !== 2) return false;
      tensors.set(key, {
        size: DTYPE_BYTES[name as keyof typeof DTYPE_BYTES],
        shape: shape.items.map(usize),
        offsets: [usize(offsets.items[0]), usize(offsets.items[1])],
      });
    }
    // Metadata::validate: sorted by offsets, back to back from 0, checked products, sizes matching.
    const sorted = [...tensors.values()].sort((a, b) =>
      a.offsets[0] !== b.offsets[0]
        ? a.offsets[0] < b.offsets[0]
          ? -1
          : 1
        : a.offsets[1] < b.offsets[1]
          ? -1
          : a.offsets[1] > b.offsets[1]
            ? 1
            : 0,
    );
    let start = 0n;
    for (const t of sorted) {
      const [s, e] = t.offsets;
      if (s !== start || e < s) return false;
      start = e;
      let count = 1n;
      for (const d of t.shape) {
        count *= d;
        if (count >= U64) return false;
      }
      if (count * BigInt(t.size) >= U64 || e - s !== count * BigInt(t.size)) return false;
    }
    return start + 8n + n === BigInt(file.length);
  } catch {
    return false;
  }
}

/** The reader's verdict: accepted, or the code it refused with. */
async function readerVerdict(path: string): Promise<string> {
  try {
    const file = await openSafetensors(path);
    try {
      detectLogicalTensors(file.tensors);
    } finally {
      await file.close();
    }
    return "accepted";
  } catch (error) {
    if (!isBringupError(error)) throw error;
    return error.code;
  }
}

/** A seeded uniform generator in [0, 1) (mulberry32). */
function uniform(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const NAMES = [
  "model.embed_tokens.weight",
  "model.layers.0.mlp.experts.gate_up_proj_blocks",
  "model.layers.0.mlp.experts.gate_up_proj_scales",
  "model.layers.0.self_attn.q_proj.weight",
  "model.layers.0.self_attn.q_proj.weight_scale_inv",
  "lm_head.weight",
  "x_blocks",
  "x_scales",
  "n\u00e4me.\u6f22\u5b57",
  "",
];
const DTYPES = ["U8", "I8", "F32", "BF16", "F16", "F8_E4M3", "F64", "BOOL", "U64"] as const;

/** One corpus file: a valid safetensors file with 0-3 mutations of its header text or bytes. */
function corpusFile(next: () => number): Uint8Array {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  const entries: { name: string; body: string }[] = [];
  let offset = 0;
  const count = Math.floor(next() * 4);
  for (let i = 0; i < count; i += 1) {
    const dtype = next() < 0.4 ? "U8" : pick(DTYPES);
    const shape = Array.from(
      { length: Math.floor(next() * 3) },
      () => Math.floor(next() * 4) + (next() < 0.1 ? 0 : 1),
    );
    const bytes = shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[dtype];
    const name = next() < 0.7 ? pick(NAMES) : `t${i}`;
    entries.push({
      name,
      body: `{"dtype":"${dtype}","shape":[${shape.join(",")}],"data_offsets":[${offset},${offset + bytes}]}`,
    });
    offset += bytes;
  }
  let data = offset;
  const pieces = entries.map((e) => `${JSON.stringify(e.name)}:${e.body}`);
  if (next() < 0.3)
    pieces.splice(Math.floor(next() * (pieces.length + 1)), 0, '"__metadata__":{"format":"pt"}');
  let text = `{${pieces.join(",")}}`;
  const mutations = Math.floor(next() * 4);
  for (let m = 0; m < mutations; m += 1) {
    const number = /\d+/g;
    const numbers = [...text.matchAll(number)];
    const at = numbers.length > 0 ? pick(numbers) : undefined;
    const replaceNumber = (by: string) => {
      if (at?.index === undefined) return;
      text = text.slice(0, at.index) + by + text.slice(at.index + at[0].length);
    };
    const firstKey = text.indexOf('":');
    switch (Math.floor(next() * 20)) {
      case 0:
        replaceNumber(`${at?.[0]}.0`);
        break;
      case 1:
        replaceNumber(
          pick(["-0", "-1", "1e0", "4E0", "18446744073709551615", "18446744073709551616", "4294967296"]),
        );
        break;
      case 2:
        text = `\ufeff${text}`;
        break;
      case 3:
        text =
          pick([" ", "\t", "\n", "\f", "\u000b", "\u00a0"]) + text + pick(["", " ", "\r\n", "\u0000", "x"]);
        break;
      case 4:
        if (firstKey > 0)
          text = `${text.slice(0, firstKey)}${pick(["\\ud800", "\\udc00", "\\ud83d\\ude00", "\\u0000", "\\u001f", "\u007f", "\\/", "\\u0041"])}${text.slice(firstKey)}`;
        break;
      case 5:
        if (entries.length > 0) {
          const e = pick(entries);
          text = `${text.slice(0, -1)},${JSON.stringify(e.name)}:${e.body}}`;
        }
        break;
      case 6:
        text = text.replace(/"dtype":"(\w+)"/, (_, d) =>
          pick([
            `"dtype":"${d}","dtype":"${d}"`,
            `"dtype":{"${d}":null}`,
            `"dtype":"${d.toLowerCase()}"`,
            `"dtype":{"${d}":1}`,
          ]),
        );
        break;
      case 7:
        text = text.replace(
          /"data_offsets":\[\d+,\d+\]/,
          (o) =>
            `${o},"extra":${pick(["1.5", "null", '{"a":[true]}', `${"[".repeat(125)}${"]".repeat(125)}`, `${"[".repeat(126)}${"]".repeat(126)}`, '"\\ud800"'])}`,
        );
        break;
      case 8:
        text = text.replace(
          pick([/,"shape":\[[\d,]*\]/, /,"data_offsets":\[\d+,\d+\]/, /"dtype":"\w+",/]),
          "",
        );
        break;
      case 9:
        text = text.replace(
          /\{"dtype":("\w+"),"shape":(\[[\d,]*\]),"data_offsets":(\[\d+,\d+\])\}/,
          pick(["[$1,$2,$3]", "[$1,$2]", "[$1,$2,$3,1]"]),
        );
        break;
      case 10:
        text = text.replace(/"dtype":"\w+"/, `"dtype":"${pick(["Q4", "F12", "u8", "F8_E4M3FN"])}"`);
        break;
      case 11:
        text = text.replace(
          /^\{/,
          pick([
            '{"__metadata__":{"a":"b"},',
            '{"__metadata__":{"a":1},',
            '{"__metadata__":null,',
            '{"__metadata__":{},"__metadata__":{},',
            '{"__metadata__":{"k":"1","k":"2"},',
          ]),
        );
        break;
      case 12:
        data += pick([-1, 1]);
        break;
      case 13:
        text = text.replace(/,\}$/, "}").replace(/\}$/, pick([",}", "}}", "]"]));
        break;
      case 14:
        text = `[${text}]`;
        break;
      case 15:
        text = text.replace(/"data_offsets":\[(\d+),(\d+)\]/, (_, a, b) => `"data_offsets":[${b},${a}]`);
        break;
      case 16:
        text = text.replace(/"data_offsets":\[\d+,\d+\]/, '"data_offsets":[0,0]');
        break;
      case 17:
        text = text.replace(/"shape":\[/, '"shape":[0,');
        break;
      default: {
        const bytes = new TextEncoder().encode(text);
        if (bytes.length > 0) bytes[Math.floor(next() * bytes.length)] = Math.floor(next() * 256);
        text = new TextDecoder("latin1").decode(bytes);
        return assemble(bytes, data, next);
      }
    }
  }
  return assemble(new TextEncoder().encode(text), data, next);
}

function assemble(header: Uint8Array, data: number, next: () => number): Uint8Array {
  const file = new Uint8Array(8 + header.length + Math.max(0, data));
  const length = next() < 0.03 ? header.length + Math.floor(next() * 16) - 8 : header.length;
  new DataView(file.buffer).setBigUint64(0, BigInt(Math.max(0, length)), true);
  file.set(header, 8);
  return file;
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "bringup-st-reference-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("the reader against the reference safetensors library", () => {
  it("agrees on a generated corpus, but for this project's rules on tensor names", async () => {
    const next = uniform(2768);
    const tally = { both: 0, neither: 0, names: 0 };
    const disagreements: string[] = [];
    for (let i = 0; i < 3000; i += 1) {
      const file = corpusFile(next);
      const path = join(dir, `${i}.safetensors`);
      await writeFile(path, file);
      const reference = referenceAccepts(file);
      const reader = await readerVerdict(path);
      if (reference && reader === "accepted") tally.both += 1;
      else if (!reference && reader !== "accepted") tally.neither += 1;
      else if (reference && /^MXFP4_|^SAFETENSORS_BAD_NAME$/.test(reader)) tally.names += 1;
      else disagreements.push(`${i}: reference ${reference ? "accepts" : "refuses"}, reader ${reader}`);
      await rm(path);
    }
    expect(disagreements).toEqual([]);
    // The corpus exercises both verdicts and the name rules.
    expect(tally.both).toBeGreaterThan(500);
    expect(tally.neither).toBeGreaterThan(500);
    expect(tally.names).toBeGreaterThan(20);
  });
});
