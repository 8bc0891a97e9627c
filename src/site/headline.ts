import type { HeadlineItem, LoadedPort } from "../catalog/index.js";
import { figureLink, formatRecordFigure } from "./figure.js";
import { text } from "./markdown.js";
import { type IndexedRecord, requireRecord } from "./record-index.js";
import { citedFigure } from "./series.js";

/** One headline item in Markdown: a record's label and figure with its method, or a stated fact. */
export function renderHeadlineItem(
  item: HeadlineItem,
  port: LoadedPort,
  records: Map<string, IndexedRecord>,
  fromPage: string,
): string {
  if ("text" in item) return text(item.text);
  const found = requireRecord(records, item.record, `${port.dir}/port.yaml (headline)`);
  const { record } = found;
  const figure = citedFigure(found.port.records, record, formatRecordFigure);
  return `${text(`${record.label}:`)} ${figureLink(text(figure), record, fromPage)}`;
}
