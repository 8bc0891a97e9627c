import { rm } from "node:fs/promises";
import { join } from "node:path";
import { BringupError } from "../common/errors.js";
import type { BenchRecord } from "./record.js";
import { appendRecord, inspectRecords, readRecords } from "./store.js";

export interface PublishPlan {
  /** Records the published store gains, each with the store file it goes to. */
  adds: { record: BenchRecord; file: string }[];
  /** Local records already published under the same id with the same content. */
  alreadyPublished: string[];
}

export interface PublishOptions {
  /**
   * Only these records (by id), each with the trial records of an A/B (`<id>-t<nnn>-<arm>`);
   * default every local record.
   */
  readonly ids?: readonly string[];
  /** Plan only: write nothing. */
  readonly dryRun?: boolean;
}

/**
 * Moves records from a port's local store into its published store: each local record is appended
 * to the published file of the same name (the published store stays append-only), then the local
 * files are removed once everything in them is published. Refuses a local record whose id the
 * published store already holds with other content (someone published that id first): nothing is
 * written then.
 */
export async function publishRecords(
  localDir: string,
  publishedDir: string,
  options: PublishOptions = {},
): Promise<PublishPlan> {
  const local = await inspectRecords(localDir, (name) => name);
  if (local.problems.length > 0) {
    // readRecords names each bad line with its full path.
    await readRecords(localDir);
  }
  const published = new Map((await readRecords(publishedDir)).map((record) => [record.id, record]));
  const wanted = options.ids === undefined ? undefined : new Set(options.ids);
  for (const id of wanted ?? []) {
    if (!local.records.some((record) => record.id === id)) {
      throw new BringupError(
        "RECORD_NOT_LOCAL",
        `${localDir} holds no record ${id}; \`bringup records list --local\` shows the local records.`,
        { subject: id },
      );
    }
  }
  const chosen = (id: string) =>
    wanted === undefined ||
    wanted.has(id) ||
    [...wanted].some((parent) => new RegExp(`^${escapeRegExp(parent)}-t[0-9]{3}-[ab]$`).test(id));
  const plan: PublishPlan = { adds: [], alreadyPublished: [] };
  for (const [index, record] of local.records.entries()) {
    if (!chosen(record.id)) continue;
    const existing = published.get(record.id);
    if (existing !== undefined) {
      if (JSON.stringify(existing) !== JSON.stringify(record)) {
        throw new BringupError(
          "RECORD_PUBLISH_CONFLICT",
          `${publishedDir} already holds a different record ${record.id} (published from another run); nothing was published. Rerun the measurement so it gets a new id, or leave this record local.`,
          { subject: record.id },
        );
      }
      plan.alreadyPublished.push(record.id);
      continue;
    }
    plan.adds.push({ record, file: local.locations[index]?.file ?? "records.jsonl" });
  }
  if (options.dryRun) return plan;
  for (const { record, file } of plan.adds) await appendRecord(publishedDir, record, file);
  if (wanted === undefined) {
    // Everything local is now published: the local copies have nothing left to add.
    await Promise.all(local.files.map((name) => rm(join(localDir, name), { force: true })));
  }
  return plan;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
