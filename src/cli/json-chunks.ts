/**
 * JSON.stringify(value, null, indent) in pieces, for a report too large to build as one string: the
 * containers down to `depth` levels are written member by member, and each value below them is one
 * piece. Joined, the pieces are JSON.stringify's text exactly (JSON strings hold no raw newline, so
 * a nested value's own text is re-indented by its line breaks).
 */
export function* jsonChunks(value: unknown, indent = 2, depth = 2): Generator<string> {
  yield* chunks(value, "", indent, depth, "");
}

function* chunks(value: unknown, key: string, indent: number, depth: number, pad: string): Generator<string> {
  const json = toJson(value, key);
  if (depth <= 0 || json === null || typeof json !== "object") {
    const text = JSON.stringify(json, null, indent) ?? "null";
    yield pad === "" ? text : text.replaceAll("\n", `\n${pad}`);
    return;
  }
  const inner = pad + " ".repeat(indent);
  const entries = members(json);
  const [open, close] = Array.isArray(json) ? ["[", "]"] : ["{", "}"];
  const [line, colon] = indent > 0 ? ["\n", ": "] : ["", ":"];
  let first = true;
  for (const [k, v] of entries) {
    yield `${first ? open : ","}${line}${inner}${Array.isArray(json) ? "" : `${JSON.stringify(k)}${colon}`}`;
    yield* chunks(v, k, indent, depth - 1, inner);
    first = false;
  }
  yield first ? `${open}${close}` : `${line}${pad}${close}`;
}

/** An array's elements (null for those JSON has no value for) or an object's members JSON writes. */
function* members(json: object): Generator<[string, unknown]> {
  if (Array.isArray(json)) {
    for (const [i, v] of json.entries()) yield [String(i), isJsonable(v) ? v : null];
    return;
  }
  for (const k of Object.keys(json)) {
    const v = (json as Record<string, unknown>)[k];
    if (isJsonable(toJson(v, k))) yield [k, v];
  }
}

/** What JSON.stringify would write for the value: its toJSON() where it has one. */
function toJson(value: unknown, key: string): unknown {
  const toJSON = (value as { toJSON?: unknown } | null | undefined)?.toJSON;
  return typeof toJSON === "function" ? toJSON.call(value, key) : value;
}

/** Whether JSON.stringify writes an object member of this value (it skips these). */
function isJsonable(value: unknown): boolean {
  return value !== undefined && typeof value !== "function" && typeof value !== "symbol";
}
