import type { Catalog, LoadedPort } from "../catalog/index.js";
import { BringupError } from "../common/errors.js";
import type { BenchRecord } from "../records/index.js";

export interface IndexedRecord {
  record: BenchRecord;
  port: LoadedPort;
}

/** Every record of the catalog by id; ids are `<port>/<slug>`, so they are unique catalog-wide. */
export function indexRecords(catalog: Catalog): Map<string, IndexedRecord> {
  const byId = new Map<string, IndexedRecord>();
  for (const port of catalog.ports) {
    for (const record of port.records) {
      if (byId.has(record.id)) {
        throw new BringupError(
          "SITE_DUPLICATE_RECORD",
          `record ${record.id} appears twice in ${port.dir}/results; keep one copy and rebuild the site.`,
          { subject: record.id },
        );
      }
      byId.set(record.id, { record, port });
    }
  }
  return byId;
}

/** Looks a record up for a reference from a manifest or a README, naming where the reference is. */
export function requireRecord(
  records: Map<string, IndexedRecord>,
  id: string,
  referencedFrom: string,
): IndexedRecord {
  const found = records.get(id);
  if (found === undefined) {
    throw new BringupError(
      "SITE_UNKNOWN_RECORD",
      `${referencedFrom} refers to record ${id}, which no results/*.jsonl holds; add the record or fix the id.`,
      { subject: referencedFrom },
    );
  }
  return found;
}
