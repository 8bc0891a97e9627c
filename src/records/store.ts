import { mkdir, open, readdir, readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { BringupError } from "../common/errors.js";
import { formatProblem, issueProblems, type Problem } from "./problems.js";
import { BenchRecord, type BenchRecordInput } from "./record.js";

export const RECORDS_FILE = "records.jsonl";

export interface ParsedRecords {
  records: BenchRecord[];
  /** The 1-based line of each record, parallel to `records`. */
  lines: number[];
  problems: Problem[];
  /** Ids named by lines that were rejected, so that references to them are not reported twice. */
  rejectedIds: string[];
}

/** Parses one JSONL store file; each bad line becomes a problem naming the file, line and field. */
export function parseRecords(text: string, file: string): ParsedRecords {
  const records: BenchRecord[] = [];
  const recordLines: number[] = [];
  const problems: Problem[] = [];
  const rejectedIds: string[] = [];
  const lines = text.split("\n");
  for (const [index, raw] of lines.entries()) {
    const line = index + 1;
    if (raw.trim() === "") continue;
    // Read the id off the raw text, so even a line that is not JSON can be named as rejected.
    const rawId = /"id"\s*:\s*"([^"]+)"/.exec(raw)?.[1];
    let data: unknown;
    try {
      data = JSON.parse(raw);
    } catch (error) {
      if (rawId !== undefined) rejectedIds.push(rawId);
      problems.push({
        file,
        line,
        message: `not valid JSON: ${(error as Error).message}`,
        expected: "one JSON record object per line",
      });
      continue;
    }
    const result = BenchRecord.safeParse(data);
    if (result.success) {
      records.push(result.data);
      recordLines.push(line);
    } else {
      if (rawId !== undefined) rejectedIds.push(rawId);
      problems.push(
        ...issueProblems(result.error.issues, { file, schema: BenchRecord, data, lineOf: () => line }),
      );
    }
  }
  return { records, lines: recordLines, problems, rejectedIds };
}

export interface RecordLocation {
  file: string;
  line: number;
}

export interface StoreContents {
  records: BenchRecord[];
  /** Where each record was read, parallel to `records`. */
  locations: RecordLocation[];
  problems: Problem[];
  /** The store files read, by name. */
  files: string[];
  rejectedIds: string[];
}

/**
 * Reads every `*.jsonl` file of a results directory (in name order) without throwing on bad
 * content; `label` maps a file name to the name problems should carry. A missing directory holds
 * no records.
 */
export async function inspectRecords(
  resultsDir: string,
  label: (fileName: string) => string = (name) => join(resultsDir, name),
): Promise<StoreContents> {
  const files = await recordFiles(resultsDir);
  const records: BenchRecord[] = [];
  const locations: RecordLocation[] = [];
  const problems: Problem[] = [];
  const rejectedIds: string[] = [];
  const seen = new Map<string, string>();
  for (const name of files) {
    const file = label(name);
    const text = await readFile(join(resultsDir, name), "utf8");
    const parsed = parseRecords(text, file);
    problems.push(...parsed.problems);
    rejectedIds.push(...parsed.rejectedIds);
    for (const [index, record] of parsed.records.entries()) {
      const line = parsed.lines[index];
      const first = seen.get(record.id);
      if (first !== undefined) {
        problems.push({
          file,
          line,
          field: "id",
          message: `duplicate record id ${record.id} (first in ${first})`,
          expected: "each record id once per port",
        });
        continue;
      }
      seen.set(record.id, file);
      records.push(record);
      locations.push({ file, line: line ?? 0 });
    }
  }
  return { records, locations, problems, files, rejectedIds };
}

/** Reads and validates every record of a results directory; throws RECORDS_INVALID naming each bad file and line. */
export async function readRecords(resultsDir: string): Promise<BenchRecord[]> {
  const { records, problems } = await inspectRecords(resultsDir);
  if (problems.length > 0) {
    throw new BringupError(
      "RECORDS_INVALID",
      `${resultsDir} holds invalid records; fix these lines:\n${problems.map(formatProblem).join("\n")}`,
      { subject: resultsDir },
    );
  }
  return records;
}

/**
 * Appends one record as one line. The store is append-only: the record is validated first, its
 * id must be new, and the line goes out in a single O_APPEND write so no existing byte is rewritten.
 */
export async function appendRecord(
  resultsDir: string,
  record: BenchRecordInput,
  file: string = RECORDS_FILE,
): Promise<BenchRecord> {
  if (basename(file) !== file || !file.endsWith(".jsonl")) {
    throw new BringupError(
      "RECORDS_FILE_INVALID",
      `"${file}" is not a store file name; use a plain name ending in .jsonl.`,
      {
        subject: file,
      },
    );
  }
  const path = join(resultsDir, file);
  const result = BenchRecord.safeParse(record);
  if (!result.success) {
    const problems = issueProblems(result.error.issues, {
      file: "record",
      schema: BenchRecord,
      data: record,
      lineOf: () => undefined,
    });
    throw new BringupError(
      "RECORD_INVALID",
      `refusing to append an invalid record to ${path}:\n${problems.map(formatProblem).join("\n")}`,
      { subject: path },
    );
  }
  const existing = await readRecords(resultsDir);
  if (existing.some((other) => other.id === result.data.id)) {
    throw new BringupError(
      "RECORD_EXISTS",
      `${resultsDir} already holds a record with id ${result.data.id}; records are never rewritten, so give the new one its own id.`,
      { subject: result.data.id },
    );
  }
  await mkdir(resultsDir, { recursive: true });
  const line = Buffer.from(`${JSON.stringify(result.data)}\n`, "utf8");
  const handle = await open(path, "a+");
  try {
    const { size } = await handle.stat();
    if (size > 0) {
      const last = Buffer.alloc(1);
      await handle.read(last, 0, 1, size - 1);
      if (last[0] !== 0x0a) {
        throw new BringupError(
          "RECORDS_CORRUPT",
          `${path} does not end with a newline, so its last line is incomplete; repair that line before appending.`,
          { subject: path },
        );
      }
    }
    const { bytesWritten } = await handle.write(line);
    if (bytesWritten !== line.length) {
      throw new BringupError(
        "RECORDS_WRITE_SHORT",
        `wrote ${bytesWritten} of ${line.length} bytes to ${path}; check the disk and repair its last line.`,
        {
          subject: path,
        },
      );
    }
  } finally {
    await handle.close();
  }
  return result.data;
}

async function recordFiles(resultsDir: string): Promise<string[]> {
  let entries: string[];
  try {
    entries = await readdir(resultsDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  return entries.filter((name) => name.endsWith(".jsonl")).sort();
}
