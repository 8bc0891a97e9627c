import { RECORD_ID_PATTERN } from "../catalog/manifest.js";
import { BringupError } from "../common/errors.js";
import { type IndexedRecord, requireRecord } from "./catalog.js";
import { formatMethod, formatValue } from "./figure.js";
import { text } from "./markdown.js";

/** `[[fig:<record-id>]]` in a port's README stands for that record's figure. */
const FIGURE_REF = /\[\[fig:([^\]\n]*)\]\]/g;

/** The record ids a README refers to, in order of appearance. */
export function figureRefs(readme: string): string[] {
  return [...readme.matchAll(FIGURE_REF)].map((match) => match[1] ?? "");
}

/**
 * Replaces each figure reference by the record's figure and its method, escaped for Markdown.
 * `file` names the README in errors, with the line of the bad reference.
 */
export function renderFigureRefs(readme: string, records: Map<string, IndexedRecord>, file: string): string {
  return readme.replace(FIGURE_REF, (_match, id: string, offset: number) => {
    const line = readme.slice(0, offset).split("\n").length;
    const where = `${file}:${line}`;
    if (!RECORD_ID_PATTERN.test(id)) {
      throw new BringupError(
        "SITE_BAD_FIGURE_REF",
        `${where}: [[fig:${id}]] is not a record id; write [[fig:<port>/<slug>]], e.g. [[fig:kimi-k2.7-code/decode-one-stream]].`,
        { subject: where },
      );
    }
    const { record } = requireRecord(records, id, where);
    return text(`${formatValue(record)} (${formatMethod(record)})`);
  });
}
