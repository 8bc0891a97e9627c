import { inReferenceSeries } from "../catalog/index.js";
import { readRecords } from "../records/index.js";

/**
 * The id the next record of `series` gets: the series id itself when the port has no record of it
 * yet, else `<series>.<n>` one past the highest run so far (records are never rewritten).
 */
export function nextSeriesId(series: string, existingIds: Iterable<string>): string {
  let highest = 0;
  for (const id of existingIds) {
    if (!inReferenceSeries(id, series)) continue;
    highest = Math.max(highest, id === series ? 1 : Number(id.slice(series.length + 1)));
  }
  return highest === 0 ? series : `${series}.${highest + 1}`;
}

/** The ids of every record in the given results directories (every store file; an absent one is empty). */
export async function recordIds(...resultsDirs: (string | undefined)[]): Promise<string[]> {
  const ids: string[] = [];
  for (const dir of resultsDirs) {
    if (dir !== undefined) ids.push(...(await readRecords(dir)).map((record) => record.id));
  }
  return ids;
}
