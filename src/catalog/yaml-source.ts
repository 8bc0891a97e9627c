import { isMap, isPair, isScalar, isSeq, LineCounter, type Node, parseDocument } from "yaml";
import type { Path, Problem } from "../records/index.js";

export interface YamlSource {
  /** The parsed value; undefined when the text did not parse. */
  data: unknown;
  /** Syntax errors, each with its line. */
  problems: Problem[];
  /** The line of the value at a path (or of its key, with `key`), else of the nearest ancestor present. */
  lineOf: (path: Path, key?: boolean) => number | undefined;
}

/** Parses YAML keeping node positions, so schema issues can be reported at their line. */
export function parseYamlSource(text: string, file: string): YamlSource {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const lineAt = (offset: number) => lineCounter.linePos(offset).line;
  if (doc.errors.length > 0) {
    return {
      data: undefined,
      problems: doc.errors.map((error) => ({
        file,
        line: lineAt(error.pos[0]),
        message: `invalid YAML: ${error.message.split("\n")[0]}`,
        expected: "well-formed YAML (a mapping of manifest fields)",
      })),
      lineOf: () => undefined,
    };
  }
  const lineOf = (path: Path, key = false): number | undefined => {
    let node: unknown = doc.contents;
    let line = node && isNodeWithRange(node) ? lineAt(node.range[0]) : 1;
    for (const [index, segment] of path.entries()) {
      const last = index === path.length - 1;
      if (isMap(node)) {
        const pair = node.items.find(
          (item) => isPair(item) && isScalar(item.key) && item.key.value === segment,
        );
        if (!pair) return line;
        if (isNodeWithRange(pair.key)) line = lineAt(pair.key.range[0]);
        if (last && key) return line;
        // The key's line is where a person reads the field, even for a nested block value.
        node = pair.value;
      } else if (isSeq(node) && typeof segment === "number") {
        node = node.items[segment];
        if (isNodeWithRange(node)) line = lineAt(node.range[0]);
      } else {
        return line;
      }
    }
    return line;
  };
  return { data: doc.toJS(), problems: [], lineOf };
}

function isNodeWithRange(value: unknown): value is Node & { range: [number, number, number] } {
  return typeof value === "object" && value !== null && Array.isArray((value as { range?: unknown }).range);
}
