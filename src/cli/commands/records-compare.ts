import { type Command, Option } from "commander";
import { compareRecords, differentConditionsRecord, slug } from "../../bench/index.js";
import { findPort, loadCatalog, localResultsDir } from "../../catalog/index.js";
import { BringupError } from "../../common/errors.js";
import { appendRecord, type BenchRecord } from "../../records/index.js";
import { projectRoot } from "../root.js";
import { table } from "./ports.js";

/** Adds `records compare` to the existing `records` group (registered by records.ts). */
export function registerRecordsCompare(program: Command): void {
  const records = program.commands.find((c) => c.name() === "records");
  if (!records) throw new Error("register the records group before records compare");
  records
    .command("compare")
    .description(
      "compare two records; records measured under different conditions need --method different-conditions",
    )
    .argument("<first>", "record id <port>/<slug>")
    .argument("<second>", "record id <port>/<slug>")
    .addOption(
      new Option(
        "--method <method>",
        "state that the records differ in conditions, to list each difference",
      ).choices(["different-conditions"]),
    )
    .option("--first-arm <name>", "which arm of the first record (default: its last)")
    .option("--second-arm <name>", "which arm of the second record (default: its last)")
    .option(
      "--record",
      "append the comparison as a different-conditions record to the second record's port (its local store)",
    )
    .option("--json", "print JSON")
    .action(
      async (
        firstId: string,
        secondId: string,
        flags: {
          method?: "different-conditions";
          firstArm?: string;
          secondArm?: string;
          record?: boolean;
          json?: boolean;
        },
        command: Command,
      ) => {
        const root = projectRoot(command);
        const catalog = await loadCatalog(root, { local: true });
        const first = findRecord(catalog.ports, firstId);
        const second = findRecord(catalog.ports, secondId);
        const comparison = compareRecords(first, second, {
          ...(flags.method ? { method: flags.method } : {}),
          ...(flags.firstArm ? { firstArm: flags.firstArm } : {}),
          ...(flags.secondArm ? { secondArm: flags.secondArm } : {}),
        });
        let recordedId: string | undefined;
        if (flags.record) {
          if (flags.method !== "different-conditions") {
            throw new BringupError(
              "RECORDS_COMPARE_RECORD_METHOD",
              "only a different-conditions comparison is recorded here; measure same-conditions comparisons with `bringup bench ab`.",
            );
          }
          const port = findPort(catalog, second.port);
          const record = differentConditionsRecord(first, second, comparison, {
            port: port.id,
            id: slug(`compare-${first.id.split("/")[1]}-${second.id.split("/")[1]}`),
            command: ["bringup", ...process.argv.slice(2)].join(" "),
          });
          recordedId = (await appendRecord(localResultsDir(root, port.id), record)).id;
        }
        if (flags.json) {
          process.stdout.write(
            `${JSON.stringify({ ...comparison, method: flags.method ?? "same-conditions", record: recordedId }, null, 2)}\n`,
          );
          return;
        }
        const lines = [
          `${second.id} (${comparison.second.arm}) against ${first.id} (${comparison.first.arm}): ratio ${comparison.ratio.toFixed(3)}x of the medians (${comparison.first.value.toFixed(3)} then ${comparison.second.value.toFixed(3)} ${first.unit}, as \`records show\` gives them)`,
        ];
        if (comparison.conditions.length > 0) {
          lines.push(
            "different conditions:",
            table([
              ["condition", first.id, second.id],
              ...comparison.conditions.map((c) => [c.name, c.a, c.b]),
            ]),
          );
        } else {
          lines.push("the fingerprints match");
        }
        if (recordedId) lines.push(`recorded as ${recordedId}`);
        process.stdout.write(`${lines.join("\n")}\n`);
      },
    );
}

/** Finds a record by id across the catalog's ports. */
export function findRecord(ports: readonly { records: BenchRecord[] }[], id: string): BenchRecord {
  for (const port of ports) {
    const record = port.records.find((r) => r.id === id);
    if (record) return record;
  }
  throw new BringupError(
    "RECORD_NOT_FOUND",
    `no record ${id}; run \`bringup records list\` to see the records.`,
    {
      subject: id,
    },
  );
}
