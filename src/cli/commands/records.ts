import { join } from "node:path";
import type { Command } from "commander";
import {
  brokenPortsNotice,
  findPort,
  loadCatalog,
  localResultsDir,
  RESULTS_DIR,
} from "../../catalog/index.js";
import { BringupError } from "../../common/errors.js";
import { type BenchRecord, type Figure, METHOD_DESCRIPTIONS, publishRecords } from "../../records/index.js";
import { formatRecordFigure } from "../../site/index.js";
import { projectRoot } from "../root.js";

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

/** How the record came to be: who measured it with what command, or where it was reported and by what stated method. */
export function provenance(record: BenchRecord): string {
  const source = record.source;
  if (source.kind === "reported") {
    return `reported, not measured by bringup: from ${source.where}; stated method: ${source.stated_method}; filed under ${record.method} (${METHOD_DESCRIPTIONS[record.method]})`;
  }
  const samples = record.arms.map((arm) => `${arm.name} ${arm.samples.length}`).join(", ");
  return `measured by ${source.tool}${source.command ? ` (${source.command})` : ""}; samples per arm: ${samples}; method: ${record.method}, ${METHOD_DESCRIPTIONS[record.method]}`;
}

/** The widest a `records list` line gets; a longer one is cut (`records show` gives the record whole). */
const LIST_WIDTH = 120;
/** A trial record of an A/B: `<ab-id>-t<n>-<arm>`. */
const TRIAL_ID = /^(.*)-t\d+-[ab]$/;

/**
 * The records, each as its id and method, then its label, then its figures, every line cut to
 * LIST_WIDTH; an A/B's trial records are counted, not listed, unless `trials`.
 */
function listing(list: readonly { record: BenchRecord; local: boolean }[], trials: boolean): string {
  const ids = new Set(list.map(({ record }) => record.id));
  const isTrial = (id: string) => ids.has(TRIAL_ID.exec(id)?.[1] ?? "");
  const shown = trials ? list : list.filter(({ record }) => !isTrial(record.id));
  const cut = (text: string) => (text.length > LIST_WIDTH ? `${text.slice(0, LIST_WIDTH - 1)}…` : text);
  const lines = shown.flatMap(({ record, local }) =>
    [
      `${record.id}${local ? " (local)" : ""}  ${record.method}`,
      `    ${record.label}`,
      `    ${summary(record)}`,
    ].map(cut),
  );
  const hidden = list.length - shown.length;
  if (hidden > 0) lines.push(`(${hidden} trial records of A/Bs not listed; --trials lists them)`);
  return lines.join("\n");
}

export function registerRecords(program: Command): void {
  const records = program.command("records").description("the measured and reported records of the ports");

  records
    .command("list")
    .description("list the published records of every port, or of one")
    .argument("[port]", "only this port's records")
    .option("--local", "also the records of local runs not yet published (marked local)")
    .option("--trials", "also each A/B trial's own record (kept beside its A/B)")
    .option("--json", "print JSON")
    .action(
      async (
        portId: string | undefined,
        options: { json?: boolean; local?: boolean; trials?: boolean },
        command: Command,
      ) => {
        const catalog = await loadCatalog(projectRoot(command), { local: options.local === true });
        const ports = portId === undefined ? catalog.ports : [findPort(catalog, portId)];
        const list = ports.flatMap((port) =>
          port.records.map((record) => ({ record, local: port.localRecords?.has(record.id) === true })),
        );
        if (options.json) {
          process.stdout.write(
            `${JSON.stringify(
              list.map(({ record, local }) => (local ? { ...record, local } : record)),
              null,
              2,
            )}\n`,
          );
          return;
        }
        process.stdout.write(`${listing(list, options.trials === true)}\n`);
        const notice = brokenPortsNotice(catalog);
        if (notice !== undefined && portId === undefined) process.stderr.write(`${notice}\n`);
      },
    );

  records
    .command("show")
    .description("print one record in full: its figure, where it came from and what its method means")
    .argument("<id>", "the record id, <port>/<slug>")
    .action(async (id: string, _options: unknown, command: Command) => {
      const catalog = await loadCatalog(projectRoot(command), { local: true });
      const port = catalog.ports.find((candidate) => candidate.records.some((r) => r.id === id));
      const record = port?.records.find((candidate) => candidate.id === id);
      if (port === undefined || record === undefined) {
        throw new BringupError(
          "RECORD_NOT_FOUND",
          `no record ${id}; run \`bringup records list --local\` to see the record ids.`,
          { subject: id },
        );
      }
      const where = port.localRecords?.has(id)
        ? `local, not published (\`bringup records publish ${port.id}\` adds it to ports/${port.id}/${RESULTS_DIR}/)`
        : `published in ports/${port.id}/${RESULTS_DIR}/`;
      process.stdout.write(
        `${record.id}: ${record.label}\n${formatRecordFigure(record)}\n${provenance(record)}\n${where}\n\n${JSON.stringify(record, null, 2)}\n`,
      );
    });

  records
    .command("publish")
    .description(
      "add the records of local runs to a port's published results (ports/<id>/results/), showing each one",
    )
    .argument("<port>", "the port whose local records to publish")
    .option("--record <ids...>", "only these records (an A/B brings its trial records along)")
    .option("--dry-run", "show what would be added and write nothing")
    .action(async (portId: string, options: { record?: string[]; dryRun?: boolean }, command: Command) => {
      const root = projectRoot(command);
      const port = findPort(await loadCatalog(root), portId);
      const localDir = localResultsDir(root, port.id);
      const plan = await publishRecords(localDir, join(port.dir, RESULTS_DIR), {
        ...(options.record !== undefined ? { ids: options.record } : {}),
        ...(options.dryRun ? { dryRun: true } : {}),
      });
      const lines = plan.adds.map(
        ({ record, file }) => `+ ${record.id} -> ${RESULTS_DIR}/${file}: ${formatRecordFigure(record)}`,
      );
      for (const id of plan.alreadyPublished) lines.push(`= ${id}: already published`);
      const verb = options.dryRun ? "would add" : "added";
      lines.push(
        plan.adds.length === 0
          ? `nothing to publish from ${localDir}`
          : `${verb} ${plan.adds.length} record${plan.adds.length === 1 ? "" : "s"} to ports/${port.id}/${RESULTS_DIR}/${options.dryRun ? " (dry run: nothing written)" : "; commit them to publish"}`,
      );
      process.stdout.write(`${lines.join("\n")}\n`);
    });
}
