import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import { type ParseArgsConfig, parseArgs } from "node:util";

type Options = NonNullable<ParseArgsConfig["options"]>;

/** What parseArgs gives for `options`: strings or booleans, possibly absent where there is no default. */
type Values<O extends Options> = {
  [K in keyof O]:
    | (O[K] extends { type: "boolean" } ? boolean : string)
    | (O[K] extends { default: unknown } ? never : undefined);
};

/**
 * A bench script's flags: `--help` prints every flag with its default and exits 0; an unknown or
 * malformed flag prints the same list after the error and exits 2, instead of a stack trace.
 */
export function benchArgs<const O extends Options>(scriptUrl: string, options: O): Values<O> {
  const script = `bench/${basename(fileURLToPath(scriptUrl))}`;
  const flags = Object.entries(options).map(([name, option]) => {
    const value = option.type === "string" ? " VALUE" : "";
    const fallback = option.default === undefined ? "" : ` (default ${String(option.default)})`;
    return `  --${name}${value}${fallback}`;
  });
  const usage = [
    `usage: npx tsx ${script} [options]; what it measures is at the top of ${script}`,
    ...flags,
    "  --help  print this and exit",
    "",
  ].join("\n");
  let values: Record<string, unknown>;
  try {
    values = parseArgs({ options: { ...options, help: { type: "boolean", default: false } } }).values;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${usage}`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(usage);
    process.exit(0);
  }
  return values as Values<O>;
}
