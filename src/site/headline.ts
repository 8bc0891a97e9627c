import type { HeadlineItem, LoadedPort } from "../catalog/index.js";
import { figureLink, formatRecordFigure } from "./figure.js";
import { text } from "./markdown.js";
import { type IndexedRecord, requireRecord } from "./record-index.js";

/** One headline item in Markdown: a record's label and figure with its method, or a stated fact. */
export function renderHeadlineItem(
  item: HeadlineItem,
  port: LoadedPort,
  records: Map<string, IndexedRecord>,
  fromPage: string,
): string {
  if ("text" in item) return text(item.text);
  const { record } = requireRecord(records, item.record, `${port.dir}/port.yaml (headline)`);
  return `${text(`${record.label}:`)} ${figureLink(text(formatRecordFigure(record)), record, fromPage)}`;
}
