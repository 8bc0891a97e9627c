import type { Command } from "commander";
import { loadCatalog } from "../../catalog/index.js";
import { BringupError } from "../../common/errors.js";
import { type BenchRecord, type Figure, METHOD_DESCRIPTIONS } from "../../records/index.js";
import { projectRoot } from "../root.js";
import { table } from "./ports.js";

function figureText(figure: Figure, unit: string): string {
  const suffix = unit === "x" || unit === "%" ? unit : ` ${unit}`;
  switch (figure.shape) {
    case "point":
      return `${figure.value}${suffix}`;
    case "range":
      return `${figure.low} to ${figure.high}${suffix}`;
    case "at-most":
      return `at most ${figure.value}${suffix}`;
    case "at-least":
      return `at least ${figure.value}${suffix}`;
    case "fraction":
      return `${figure.passed}/${figure.total} ${unit}`;
  }
}

/** The record's figures in one line: each arm, then the comparison. */
function summary(record: BenchRecord): string {
  const arms = record.arms.map((arm) => {
    const stated = arm.figure
      ? figureText(arm.figure, record.unit)
      : `${arm.samples.length} sample${arm.samples.length === 1 ? "" : "s"}`;
    return record.arms.length === 1 ? stated : `${arm.name}: ${stated}`;
  });
  if (record.comparison) arms.push(`ratio ${figureText(record.comparison.figure, "x")}`);
  return arms.join("; ");
}

export function registerRecords(program: Command): void {
  const records = program.command("records").description("the measured and reported records of the ports");

  records
    .command("list")
    .description("list the records of every port, or of one")
    .argument("[port]", "only this port's records")
    .option("--json", "print JSON")
    .action(async (portId: string | undefined, options: { json?: boolean }, command: Command) => {
      const catalog = await loadCatalog(projectRoot(command));
      const ports = portId === undefined ? catalog.ports : catalog.ports.filter((port) => port.id === portId);
      if (portId !== undefined && ports.length === 0) {
        throw new BringupError(
          "PORT_NOT_FOUND",
          `no port ${portId}; run \`bringup ports list\` to see the ports.`,
          {
            subject: portId,
          },
        );
      }
      const list = ports.flatMap((port) => port.records);
      if (options.json) {
        process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
        return;
      }
      const rows = list.map((record) => [record.id, record.method, record.label, summary(record)]);
      process.stdout.write(`${table([["ID", "METHOD", "WHAT", "FIGURES"], ...rows])}\n`);
    });

  records
    .command("show")
    .description("print one record in full, with what its method means")
    .argument("<id>", "the record id, <port>/<slug>")
    .action(async (id: string, _options: unknown, command: Command) => {
      const catalog = await loadCatalog(projectRoot(command));
      const record = catalog.ports.flatMap((port) => port.records).find((candidate) => candidate.id === id);
      if (record === undefined) {
        throw new BringupError(
          "RECORD_NOT_FOUND",
          `no record ${id}; run \`bringup records list\` to see the record ids.`,
          { subject: id },
        );
      }
      process.stdout.write(
        `${record.id}: ${record.label}\n${summary(record)}\nmethod: ${record.method}, ${METHOD_DESCRIPTIONS[record.method]}\n\n${JSON.stringify(record, null, 2)}\n`,
      );
    });
}
