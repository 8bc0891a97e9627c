import type { z } from "zod";

/** One thing wrong with an input file, located as precisely as the input allows. */
export interface Problem {
  /** The file, as the caller named it (the linter uses paths relative to the project root). */
  file: string;
  /** 1-based line, when the problem has one. */
  line?: number;
  /** Dotted path of the field, e.g. `gates.0.kind`. */
  field?: string;
  message: string;
  /** What would have been accepted. */
  expected?: string;
}

/** `file:line: field: message (expected ...)`, the one line the CLI prints per problem. */
export function formatProblem(problem: Problem): string {
  const where = problem.line === undefined ? problem.file : `${problem.file}:${problem.line}`;
  const field = problem.field ? ` ${problem.field}:` : "";
  const expected = problem.expected ? ` (expected ${problem.expected})` : "";
  return `${where}:${field} ${problem.message}${expected}`;
}

export type Path = readonly PropertyKey[];

export interface IssueContext {
  file: string;
  /** The schema that produced the issues, used to list the fields and forms it accepts. */
  schema: z.ZodType;
  /** The input that was validated, used to pick the branch of a discriminated union. */
  data: unknown;
  /** The line of the value (or, with `key`, of the key) at a path; nearest existing ancestor when absent. */
  lineOf: (path: Path, key?: boolean) => number | undefined;
}

/** Turns zod issues into problems that name the file, line, field and what was expected. */
export function issueProblems(issues: readonly z.core.$ZodIssue[], context: IssueContext): Problem[] {
  const problems: Problem[] = [];
  for (const issue of issues) {
    const base = { file: context.file };
    if (issue.code === "unrecognized_keys") {
      const known = objectKeys(schemasAt(context.schema, issue.path, context.data));
      for (const key of issue.keys) {
        const path = [...issue.path, key];
        problems.push({
          ...base,
          line: context.lineOf(path, true),
          field: fieldName(path),
          message: `unknown field "${key}"`,
          expected: known.length > 0 ? `one of the fields ${known.join(", ")}` : undefined,
        });
      }
      continue;
    }
    const described = describe(issue, context);
    const missing = issue.path.length > 0 && valueAt(context.data, issue.path) === undefined;
    problems.push({
      ...base,
      line: context.lineOf(issue.path, false),
      field: issue.path.length > 0 ? fieldName(issue.path) : undefined,
      ...described,
      ...(missing && issue.code !== "custom" ? { message: "missing" } : {}),
    });
  }
  return problems;
}

function describe(issue: z.core.$ZodIssue, context: IssueContext): Pick<Problem, "message" | "expected"> {
  switch (issue.code) {
    case "invalid_type": {
      const received = /received (\w+)/.exec(issue.message)?.[1];
      return {
        message: `wrong type${received ? ` (got ${received})` : ""}`,
        expected: `${/^[aeiou]/.test(issue.expected) ? "an" : "a"} ${issue.expected}`,
      };
    }
    case "invalid_value":
      return {
        message: "not an accepted value",
        expected: `one of ${issue.values.map((value) => String(value)).join(", ")}`,
      };
    case "invalid_union": {
      if ("discriminator" in issue && issue.discriminator !== undefined) {
        const options = (issue as { options?: unknown[] }).options ?? [];
        return {
          message: `unknown ${issue.discriminator}`,
          expected: `one of ${options.map((option) => String(option)).join(", ")}`,
        };
      }
      const forms = schemasAt(context.schema, issue.path, context.data, false).map(describeForm);
      return {
        message: "matches none of the accepted forms",
        expected: forms.length > 0 ? forms.join(" or ") : undefined,
      };
    }
    case "too_small":
      return {
        message: "too small",
        expected: bound("at least", issue.minimum, issue.inclusive, issue.origin),
      };
    case "too_big":
      return { message: "too big", expected: bound("at most", issue.maximum, issue.inclusive, issue.origin) };
    case "invalid_format":
      // Our regexes carry the expected form as their message (e.g. "<port>/<slug>").
      return {
        message: `not a valid ${issue.format === "regex" ? "value" : issue.format}`,
        expected: issue.message,
      };
    case "custom": {
      // Our refinements pass what they would accept as `params.expected`.
      const expected = (issue.params as { expected?: unknown } | undefined)?.expected;
      return { message: issue.message, expected: typeof expected === "string" ? expected : undefined };
    }
    default:
      return { message: issue.message };
  }
}

function bound(
  word: "at least" | "at most",
  limit: number | bigint,
  inclusive: boolean | undefined,
  origin: string,
): string {
  if (origin === "array") return `${word} ${limit} item${limit === 1 ? "" : "s"}`;
  if (origin === "string") return `${word} ${limit} character${limit === 1 ? "" : "s"}`;
  if (inclusive === false) return `${word === "at least" ? "more" : "less"} than ${limit}`;
  return `${word} ${limit}`;
}

function fieldName(path: Path): string {
  return path.map((segment) => String(segment)).join(".");
}

// zod has no public "what does this schema accept at this path" query, so walk its definitions.
type Def = {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  valueType?: z.ZodType;
  options?: z.ZodType[];
  discriminator?: string;
  values?: unknown[];
};

function def(schema: z.ZodType): Def {
  return (schema as unknown as { _zod: { def: Def } })._zod.def;
}

const WRAPPERS = new Set(["optional", "default", "prefault", "nullable", "readonly", "catch", "nonoptional"]);

function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (;;) {
    const d = def(current);
    if (WRAPPERS.has(d.type) && d.innerType) current = d.innerType;
    else if (d.type === "pipe" && d.in) current = d.in;
    else return current;
  }
}

/** Unwraps and, when `expandUnions`, replaces a union by its options (only the matching one of a discriminated union). */
function expand(schemas: z.ZodType[], value: unknown, expandUnions = true): z.ZodType[] {
  const out: z.ZodType[] = [];
  for (const schema of schemas.map(unwrap)) {
    const d = def(schema);
    if (d.type === "union" && d.options && expandUnions) {
      let options = d.options;
      if (d.discriminator && isRecord(value)) {
        const tag = value[d.discriminator];
        const matching = options.filter((option) =>
          discriminatorValues(option, d.discriminator ?? "").includes(tag),
        );
        if (matching.length > 0) options = matching;
      }
      out.push(...expand(options, value));
    } else {
      out.push(schema);
    }
  }
  return out;
}

function discriminatorValues(option: z.ZodType, discriminator: string): unknown[] {
  const field = def(unwrap(option)).shape?.[discriminator];
  return field ? (def(unwrap(field)).values ?? []) : [];
}

function schemasAt(root: z.ZodType, path: Path, data: unknown, expandLast = true): z.ZodType[] {
  let schemas = [root];
  let value = data;
  for (const segment of path) {
    const next: z.ZodType[] = [];
    for (const schema of expand(schemas, value)) {
      const d = def(schema);
      if (d.type === "object" && typeof segment === "string" && d.shape?.[segment])
        next.push(d.shape[segment]);
      else if (d.type === "array" && typeof segment === "number" && d.element) next.push(d.element);
      else if (d.type === "record" && d.valueType) next.push(d.valueType);
    }
    schemas = next;
    value =
      isRecord(value) || Array.isArray(value) ? (value as Record<PropertyKey, unknown>)[segment] : undefined;
  }
  if (expandLast) return expand(schemas, value);
  return schemas.flatMap((schema) => {
    const d = def(unwrap(schema));
    return d.type === "union" && d.options ? d.options.map(unwrap) : [unwrap(schema)];
  });
}

function objectKeys(schemas: z.ZodType[]): string[] {
  const keys = new Set<string>();
  for (const schema of schemas) for (const key of Object.keys(def(schema).shape ?? {})) keys.add(key);
  return [...keys];
}

function describeForm(schema: z.ZodType): string {
  const d = def(schema);
  if (d.type === "object") return `{ ${Object.keys(d.shape ?? {}).join(", ")} }`;
  return d.type;
}

function valueAt(data: unknown, path: Path): unknown {
  let value = data;
  for (const segment of path) {
    if (!isRecord(value) && !Array.isArray(value)) return undefined;
    value = (value as Record<PropertyKey, unknown>)[segment];
  }
  return value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
