import { type Command, InvalidArgumentError, Option } from "commander";
import {
  checkCatalog,
  FEATURE_IDS,
  type FeatureId,
  isFeatureId,
  loadCatalog,
  manifestJsonSchema,
  provenLevels,
  provenSummary,
  scaffoldPort,
  WEIGHT_FORMATS,
} from "../../catalog/index.js";
import { formatProblem } from "../../records/index.js";
import { projectRoot } from "../root.js";
import { table } from "../table.js";

export { table };

function positiveNumber(value: string): number {
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0) throw new InvalidArgumentError("expected a positive number.");
  return number;
}

function positiveInt(value: string): number {
  const number = positiveNumber(value);
  if (!Number.isInteger(number)) throw new InvalidArgumentError("expected a positive whole number.");
  return number;
}

function featureId(value: string, previous: FeatureId[] = []): FeatureId[] {
  if (!isFeatureId(value)) {
    throw new InvalidArgumentError(`unknown feature; expected one of ${FEATURE_IDS.join(", ")}.`);
  }
  return [...previous, value];
}

/** Pads each column to its widest cell. */
export function registerPorts(program: Command): void {
  const ports = program.command("ports").description("the catalog of ports: list, check, new, schema");

  ports
    .command("list")
    .description(
      "list every port with its model, size, target, status (the Ports page's claim) and what this repository proves",
    )
    .option("--json", "print JSON")
    .action(async (options: { json?: boolean }, command: Command) => {
      const catalog = await loadCatalog(projectRoot(command));
      if (options.json) {
        const rows = catalog.ports.map((port) => ({
          id: port.id,
          model: port.manifest.model,
          scope: port.manifest.scope,
          features: port.manifest.hard.features,
          target: port.manifest.target,
          status: port.manifest.status,
          proven: provenLevels(port).map(({ level, state, records }) => ({
            level,
            state,
            records: records.map((record) => record.id),
          })),
          records: port.records.length,
        }));
        const broken = (catalog.broken ?? []).map(({ id, problems }) => ({
          id,
          broken: true,
          problems: problems.map(formatProblem),
        }));
        process.stdout.write(`${JSON.stringify([...rows, ...broken], null, 2)}\n`);
        return;
      }
      const rows = catalog.ports.map((port) => {
        const { id, manifest, records } = port;
        const { model, target } = manifest;
        const size = [
          model.total_params_b === undefined ? undefined : `${model.total_params_b}B`,
          model.architecture,
          model.active_params_b === undefined ? undefined : `(${model.active_params_b}B active)`,
        ].filter((part) => part !== undefined);
        return [
          id,
          model.name,
          size.join(" ") || "not stated",
          `${target.accelerator}, ${target.cards} cards, ${target.nodes} node${target.nodes === 1 ? "" : "s"}`,
          manifest.status.state,
          provenSummary(provenLevels(port)),
          String(records.length),
        ];
      });
      for (const { id, problems } of catalog.broken ?? []) {
        rows.push([
          id,
          "-",
          "-",
          "-",
          `broken (${problems.length} problems; bringup ports check ${id})`,
          "-",
          "-",
        ]);
      }
      rows.sort((a, b) => (a[0] ?? "").localeCompare(b[0] ?? ""));
      process.stdout.write(
        `${table([["ID", "MODEL", "SIZE", "RUNS ON", "STATUS", "PROVEN HERE", "RECORDS"], ...rows])}\n`,
      );
    });

  ports
    .command("check")
    .description(
      "lint the layout, manifests, records and pages of every port (or one); exit 1 on any problem",
    )
    .argument("[id]", "check only this port")
    .option("--json", "print the diagnostics as JSON")
    .action(async (id: string | undefined, options: { json?: boolean }, command: Command) => {
      const root = projectRoot(command);
      const diagnostics = await checkCatalog(root, id);
      if (options.json) {
        process.stdout.write(`${JSON.stringify({ ok: diagnostics.length === 0, diagnostics }, null, 2)}\n`);
      } else if (diagnostics.length === 0) {
        process.stdout.write(`ok: ${id === undefined ? "every port passes" : `${id} passes`}\n`);
      } else {
        process.stdout.write(`${diagnostics.map(formatProblem).join("\n")}\n`);
        process.stderr.write(`${diagnostics.length} problem${diagnostics.length === 1 ? "" : "s"} found\n`);
      }
      if (diagnostics.length > 0) process.exitCode = 1;
    });

  ports
    .command("new")
    .description(
      "start a port: ports/<id>/ with a manifest and page that pass the linter, written atomically",
    )
    .argument("<id>", "the port id, a lowercase slug such as mimo-v2.6-flash")
    .requiredOption("--params <billions>", "total parameters, in billions", positiveNumber)
    .requiredOption("--feature <id>", "a feature that makes the model hard (repeatable)", featureId)
    .option("--name <name>", "the model's name (default: the id)")
    .option("--family <family>", "the model family (default: the name)")
    .addOption(
      new Option("--architecture <kind>", "moe or dense (default: moe with --active-params)").choices([
        "moe",
        "dense",
      ]),
    )
    .option("--active-params <billions>", "active parameters per token, in billions", positiveNumber)
    .addOption(new Option("--format <format...>", "weight formats").choices([...WEIGHT_FORMATS]))
    .option("--context-length <tokens>", "the longest context to serve", positiveInt)
    .option("--summary <line>", "what makes the model hard, one line (default: the features' descriptions)")
    .option("--cards <n>", "cards per target (default 8)", positiveInt)
    .option("--nodes <n>", "nodes (default 1)", positiveInt)
    .action(
      async (
        id: string,
        options: {
          params: number;
          feature: FeatureId[];
          name?: string;
          family?: string;
          architecture?: "moe" | "dense";
          activeParams?: number;
          format?: (typeof WEIGHT_FORMATS)[number][];
          contextLength?: number;
          summary?: string;
          cards?: number;
          nodes?: number;
        },
        command: Command,
      ) => {
        const dir = await scaffoldPort(projectRoot(command), {
          id,
          name: options.name,
          family: options.family,
          architecture: options.architecture,
          totalParamsB: options.params,
          activeParamsB: options.activeParams,
          weightFormats: options.format,
          contextLength: options.contextLength,
          features: options.feature,
          summary: options.summary,
          cards: options.cards,
          nodes: options.nodes,
        });
        process.stdout.write(`created ${dir}\n`);
      },
    );

  ports
    .command("schema")
    .description("print the port manifest's JSON Schema")
    .action(() => {
      process.stdout.write(`${JSON.stringify(manifestJsonSchema(), null, 2)}\n`);
    });
}
