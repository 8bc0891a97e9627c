import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { exists, writeDirectoryAtomic } from "../common/atomic-write.js";
import { BringupError } from "../common/errors.js";
import { formatProblem } from "../records/index.js";
import { inspectPort, PORTS_DIR } from "./check.js";
import { FEATURES, type FeatureId } from "./features.js";
import { MANIFEST_FILE, README_FILE } from "./layout.js";
import { PORT_ID_PATTERN, PortManifest, type PortManifestInput, type WEIGHT_FORMATS } from "./manifest.js";

export interface ScaffoldOptions {
  id: string;
  /** The model's name as its publisher writes it; defaults to the id. */
  name?: string;
  /** Defaults to the name. */
  family?: string;
  architecture?: "moe" | "dense";
  totalParamsB: number;
  activeParamsB?: number;
  weightFormats?: (typeof WEIGHT_FORMATS)[number][];
  contextLength?: number;
  /** What makes the model hard, from the feature registry; at least one. */
  features: FeatureId[];
  /** One line for the index; defaults to the features' descriptions. */
  summary?: string;
  cards?: number;
  nodes?: number;
}

/** The seed's platform: every port starts from Gaudi 2, software 1.24.1, lazy mode with HPU graphs. */
const STARTING_POINT = {
  target: { accelerator: "gaudi2", cards: 8, nodes: 1 },
  software: { gaudi_software: "1.24.1", execution_mode: "lazy", hpu_graphs: true },
} as const;

/** The manifest a new port starts with, validated. */
export function scaffoldManifest(options: ScaffoldOptions): PortManifestInput {
  const name = options.name ?? options.id;
  const manifest: PortManifestInput = {
    id: options.id,
    model: {
      name,
      family: options.family ?? name,
      architecture: options.architecture ?? (options.activeParamsB === undefined ? "dense" : "moe"),
      total_params_b: options.totalParamsB,
      ...(options.activeParamsB === undefined ? {} : { active_params_b: options.activeParamsB }),
      weight_formats: options.weightFormats ?? ["bf16"],
      ...(options.contextLength === undefined ? {} : { context_length: options.contextLength }),
    },
    scope: "full",
    hard: {
      summary: options.summary ?? options.features.map((feature) => FEATURES[feature]).join(" "),
      features: options.features,
    },
    target: {
      ...STARTING_POINT.target,
      cards: options.cards ?? STARTING_POINT.target.cards,
      nodes: options.nodes ?? STARTING_POINT.target.nodes,
    },
    software: { ...STARTING_POINT.software },
    status: { state: "in-progress" },
    gates: [],
    headline: [],
  };
  const result = PortManifest.safeParse(manifest);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
    throw new BringupError(
      "SCAFFOLD_INVALID",
      `cannot start port ${options.id} with these options:\n${problems.join("\n")}`,
      { subject: options.id },
    );
  }
  return manifest;
}

function scaffoldReadme(manifest: PortManifestInput): string {
  const { model, target } = manifest;
  const nodes = target.nodes === 1 ? "one node" : `${target.nodes} nodes`;
  return `# ${model.name}

${model.name} is being brought up on Gaudi 2, ${target.cards} cards on ${nodes}. This page grows with the
port: what was hard, how it was solved, which gates it passes and what it measured.

## What was hard

${manifest.hard.summary}

## How it was solved

In progress.

## Gates it passes

None yet. A gate joins \`port.yaml\` together with the record that shows it passing.

## What it measured

Nothing yet. Figures arrive as records in \`results/*.jsonl\` and are cited here as
\`[[fig:${manifest.id}/<slug>]]\`, never typed by hand.
`;
}

/**
 * Creates `ports/<id>/` with a manifest and a page that pass the linter, all at once or not at
 * all. Refuses a malformed id and an id that a directory or another manifest already uses.
 */
export async function scaffoldPort(root: string, options: ScaffoldOptions): Promise<string> {
  const { id } = options;
  if (!PORT_ID_PATTERN.test(id)) {
    throw new BringupError(
      "PORT_ID_INVALID",
      `"${id}" is not a port id; use a lowercase slug of letters, digits, dots and dashes such as mimo-v2.6-flash.`,
      { subject: id },
    );
  }
  const portsDir = join(root, PORTS_DIR);
  if (!(await exists(portsDir))) {
    throw new BringupError(
      "CATALOG_NOT_FOUND",
      `${portsDir} does not exist; run bringup from a checkout that has ports/, or pass --root <dir>.`,
      { subject: portsDir },
    );
  }
  const dir = join(portsDir, id);
  if (await exists(dir)) {
    throw new BringupError("PORT_EXISTS", `${dir} already exists; choose another id or edit that port.`, {
      subject: id,
    });
  }
  const claimedBy = await manifestDeclaring(portsDir, id);
  if (claimedBy !== undefined) {
    throw new BringupError("PORT_EXISTS", `${claimedBy} already declares id ${id}; choose another id.`, {
      subject: id,
    });
  }
  const manifest = scaffoldManifest(options);
  await writeDirectoryAtomic(dir, async (tmp) => {
    const header = `# ${manifest.model.name}: the port's manifest. Schema: \`bringup ports schema\`.\n`;
    await writeFile(join(tmp, MANIFEST_FILE), header + stringify(manifest));
    await writeFile(join(tmp, README_FILE), scaffoldReadme(manifest));
    // Check before the rename, so a scaffold that would fail the linter never lands.
    const { diagnostics } = await inspectPort(tmp, `${PORTS_DIR}/${id}`, id);
    if (diagnostics.length > 0) {
      throw new BringupError(
        "SCAFFOLD_INVALID",
        `the scaffold for ${id} would not pass the linter:\n${diagnostics.map(formatProblem).join("\n")}`,
        { subject: id },
      );
    }
  });
  return dir;
}

async function manifestDeclaring(portsDir: string, id: string): Promise<string | undefined> {
  for (const entry of await readdir(portsDir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const path = join(portsDir, entry.name, MANIFEST_FILE);
    let declared: unknown;
    try {
      declared = (parse(await readFile(path, "utf8")) as { id?: unknown } | null)?.id;
    } catch {
      continue; // unreadable or invalid manifests are the linter's business, not the scaffolder's
    }
    if (declared === id) return path;
  }
  return undefined;
}
