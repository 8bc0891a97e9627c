import { RECORD_ID_PATTERN } from "../catalog/index.js";
import { BringupError } from "../common/errors.js";
import { figureLink, formatMethod, formatValue } from "./figure.js";
import { text } from "./markdown.js";
import { type IndexedRecord, requireRecord } from "./record-index.js";
import { citedFigure } from "./series.js";

/** `[[fig:<record-id>]]` in a port's README stands for that record's figure. */
const FIGURE_REF = /\[\[fig:([^\]\n]*)\]\]/g;
const FENCE = /^\s*(```+|~~~+)/;
const INLINE_CODE = /(`+)[^`]*?\1/g;

function renderRef(id: string, where: string, records: Map<string, IndexedRecord>, page: string): string {
  if (!RECORD_ID_PATTERN.test(id)) {
    throw new BringupError(
      "SITE_BAD_FIGURE_REF",
      `${where}: [[fig:${id}]] is not a record id; write [[fig:<port>/<slug>]], e.g. [[fig:kimi-k2.7-code/decode-one-stream]].`,
      { subject: where },
    );
  }
  const found = requireRecord(records, id, where);
  const figure = citedFigure(
    found.port.records,
    found.record,
    (r) => `${formatValue(r)} (${formatMethod(r)})`,
  );
  return figureLink(text(figure), found.record, page);
}

/** Replaces references in prose text, leaving inline code spans as written. */
function renderLine(line: string, where: string, records: Map<string, IndexedRecord>, page: string): string {
  let out = "";
  let last = 0;
  for (const span of line.matchAll(INLINE_CODE)) {
    out += line
      .slice(last, span.index)
      .replace(FIGURE_REF, (_m, id: string) => renderRef(id.trim(), where, records, page));
    out += span[0];
    last = span.index + span[0].length;
  }
  return (
    out + line.slice(last).replace(FIGURE_REF, (_m, id: string) => renderRef(id.trim(), where, records, page))
  );
}

/**
 * Replaces each figure reference in prose by the record's figure and its method, escaped for
 * Markdown; code (fenced or inline) is left as written, as the linter reads it. `file` names the
 * README in errors, with the line of the bad reference.
 */
export function renderFigureRefs(
  readme: string,
  records: Map<string, IndexedRecord>,
  file: string,
  page: string,
): string {
  let fence: string | undefined;
  return readme
    .split("\n")
    .map((line, index) => {
      const marker = FENCE.exec(line)?.[1];
      if (marker !== undefined) {
        if (fence === undefined) fence = marker;
        else if (marker.startsWith(fence)) fence = undefined;
        return line;
      }
      if (fence !== undefined) return line;
      return renderLine(line, `${file}:${index + 1}`, records, page);
    })
    .join("\n");
}
