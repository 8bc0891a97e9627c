import { BringupError } from "../common/errors.js";
import { MAX_INDEX_BYTES, readBoundedBytes } from "./bounded-file.js";
import { JsonScanner } from "./json-scanner.js";
import { MAX_METADATA_ENTRIES, MAX_NAME_BYTES, MAX_TENSORS } from "./safetensors-header.js";

/** What `model.safetensors.index.json` says: which shard holds each tensor, and its string metadata. */
export interface ShardIndex {
  /** Tensor name to shard file name, in the order listed (a name listed twice keeps its last shard). */
  readonly weightMap: ReadonlyMap<string, string>;
  /** `metadata` entries whose values are strings; others (`total_size`) are not used. */
  readonly metadata: Readonly<Record<string, string>>;
}

/**
 * Reads an index as JSON.parse would, building only the weight map and string metadata, and
 * refusing one that lists more tensors than a checkpoint may hold as soon as it does: a 64 MB index
 * of short names would otherwise build millions of entries before its shards are looked at.
 */
export async function readShardIndex(path: string): Promise<ShardIndex> {
  const bad = (what: string): never => {
    throw new BringupError(
      "BAD_INDEX",
      `${path}: not a valid index (${what}); it needs a weight_map of tensor name to shard file.`,
      { subject: path },
    );
  };
  const json = new JsonScanner(await readBoundedBytes(path, MAX_INDEX_BYTES), (what, at) =>
    bad(`${what} at byte ${at}`),
  );
  let weightMap: Map<string, string> | undefined;
  const metadata: Record<string, string> = {};
  if (json.peek() !== 0x7b) bad("it is not a JSON object");
  json.items("{", (key) => {
    if (key === "weight_map") {
      if (json.peek() !== 0x7b) bad("weight_map is not an object");
      weightMap = new Map();
      const map = weightMap;
      json.items(
        "{",
        (name) => {
          if (json.peek() !== 0x22) bad(`weight_map.${name} is not a string`);
          map.delete(name);
          map.set(name, json.string(MAX_NAME_BYTES));
          if (map.size > MAX_TENSORS)
            bad(`weight_map lists more than ${MAX_TENSORS} tensors, more than any checkpoint holds`);
        },
        MAX_NAME_BYTES,
      );
    } else if (key === "metadata") {
      if (json.peek() !== 0x7b) bad("metadata is not an object");
      let entries = 0;
      json.items("{", (name) => {
        if (++entries > MAX_METADATA_ENTRIES) bad(`metadata has more than ${MAX_METADATA_ENTRIES} entries`);
        if (json.peek() !== 0x22) {
          Reflect.deleteProperty(metadata, name); // a repeated key keeps its last value, as JSON.parse does
          return json.skip();
        }
        Object.defineProperty(metadata, name, {
          value: json.string(),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      });
    } else json.skip();
  });
  json.end();
  return { weightMap: weightMap ?? bad("it has no weight_map"), metadata };
}
