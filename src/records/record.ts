import { z } from "zod";
import { Fingerprint, fingerprintDifferences } from "./fingerprint.js";

export { Fingerprint };

export const RECORD_SCHEMA_VERSION = "bringup.record/1";

/**
 * How a number was measured, in the seed's vocabulary. `different-conditions` must name its
 * conditions. A figure taken from elsewhere keeps the method its source states, with a reported
 * source saying where it came from; `reported` is the method only when the source states none.
 */
export const METHODS = [
  "same-pod-ab",
  "same-node-ab",
  "chained-ab",
  "different-conditions",
  "single-run",
  "reported",
] as const;
export const Method = z.enum(METHODS);
export type Method = z.infer<typeof Method>;

export const METHOD_DESCRIPTIONS: Record<Method, string> = {
  "same-pod-ab": "both arms on one host in one session, trials interleaved (ABBA), ratio taken pair by pair",
  "same-node-ab": "the arms on different devices of one node, measured at the same time",
  "chained-ab": "a ratio composed from A/B records that share an arm, interval composed too",
  "different-conditions":
    "a ratio of records whose fingerprints differ; shown only with the named differences",
  "single-run": "one arm, no comparison",
  reported: "a figure from elsewhere, with where it came from and its stated method",
};

/** Units a figure may carry; anything else is rejected so that pages render consistently. */
export const UNITS = [
  "tok/s",
  "ms",
  "s",
  "x",
  "%",
  "tokens",
  "needles",
  "GiB",
  "GiB/s",
  "req/s",
  "count",
  "perplexity",
  "nats",
  // An absolute difference in the compared values' own units (a block's output, float32).
  "abs",
] as const;
export const Unit = z.enum(UNITS);
export type Unit = z.infer<typeof Unit>;

/** Decimal places a source stated a figure with: JSON keeps 35.0 as 35, the page must not. */
const Decimals = z.int().min(0).max(6).optional();

/** The shape of a stated figure: one value, a range over conditions, a bound, or passed out of total. */
export const Figure = z.discriminatedUnion("shape", [
  z.strictObject({ shape: z.literal("point"), value: z.number(), decimals: Decimals }),
  z.strictObject({ shape: z.literal("range"), low: z.number(), high: z.number(), decimals: Decimals }),
  z.strictObject({ shape: z.literal("at-most"), value: z.number(), decimals: Decimals }),
  z.strictObject({ shape: z.literal("at-least"), value: z.number(), decimals: Decimals }),
  z.strictObject({ shape: z.literal("fraction"), passed: z.int().nonnegative(), total: z.int().positive() }),
]);
export type Figure = z.infer<typeof Figure>;

export const Arm = z.strictObject({
  name: z.string().min(1),
  /** Raw samples as measured; a reported arm may have none and carry only its stated figure. */
  samples: z.array(z.number()).default([]),
  figure: Figure.optional(),
  fingerprint: Fingerprint.optional(),
});
export type Arm = z.infer<typeof Arm>;

export const Condition = z.strictObject({
  name: z.string().min(1),
  a: z.string().min(1),
  b: z.string().min(1),
});

export const Source = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("measured"),
    tool: z.string().min(1),
    command: z.string().optional(),
  }),
  z.strictObject({
    kind: z.literal("reported"),
    where: z.string().min(1).describe("where the figure was published"),
    stated_method: z.string().min(1).describe("the method in the words of the source, or 'not stated'"),
  }),
]);

export const Comparison = z.strictObject({
  /** b over a, or a over b when `better` is lower; the figure is the ratio as stated or measured. */
  figure: Figure,
  ci95: z.tuple([z.number(), z.number()]).optional(),
  cv: z.number().nonnegative().optional(),
  better: z.enum(["higher", "lower"]),
});

/** The fingerprint fields that the arms of an A/B must share: one host (and device kind) for a same-pod A/B, one node for a same-node A/B. */
const SAME_HOST_FIELDS: Partial<Record<Method, readonly string[]>> = {
  "same-pod-ab": ["host", "hardware"],
  "same-node-ab": ["host"],
};

export const BenchRecord = z
  .strictObject({
    schema: z.literal(RECORD_SCHEMA_VERSION),
    id: z.string().regex(/^[a-z0-9]+(?:[.-][a-z0-9]+)*\/[a-z0-9]+(?:[.-][a-z0-9]+)*$/, "<port>/<slug>"),
    port: z.string().min(1),
    metric: z.string().regex(/^[a-z0-9_]+$/, "snake_case metric name"),
    label: z.string().min(1).describe("what the figure is, in a few words, without the number"),
    unit: Unit,
    method: Method,
    conditions: z.array(Condition).optional(),
    context: z.string().optional().describe("what the figure applies to, e.g. at one stream, 2K to 517K"),
    source: Source,
    arms: z.array(Arm).min(1),
    comparison: Comparison.optional(),
    /** Ids of the records a chained-ab was composed from. */
    chained_from: z.array(z.string()).optional(),
    recorded_at: z.iso.datetime(),
  })
  .superRefine((record, ctx) => {
    if (!record.id.startsWith(`${record.port}/`)) {
      ctx.addIssue({
        code: "custom",
        path: ["id"],
        message: `must start with the port id "${record.port}/"`,
        params: { expected: `${record.port}/<slug>` },
      });
    }
    if (record.method === "different-conditions" && (record.conditions?.length ?? 0) === 0) {
      ctx.addIssue({
        code: "custom",
        path: ["conditions"],
        message: "different-conditions must name each condition that differs",
        params: { expected: "conditions: [{ name, a, b }, ...] with at least one entry" },
      });
    }
    if (record.method === "reported" && record.source.kind !== "reported") {
      ctx.addIssue({
        code: "custom",
        path: ["source"],
        message: "a reported figure needs a reported source",
        params: { expected: "source: { kind: reported, where, stated_method }" },
      });
    }
    for (const [index, arm] of record.arms.entries()) {
      if (arm.samples.length === 0 && arm.figure === undefined) {
        ctx.addIssue({
          code: "custom",
          path: ["arms", index],
          message: "an arm needs samples or a stated figure",
          params: { expected: "samples: [...] or figure: { shape, ... }" },
        });
      }
    }
    const sameHost = SAME_HOST_FIELDS[record.method];
    const [first, ...others] = record.arms;
    if (sameHost && first?.fingerprint) {
      for (const [offset, arm] of others.entries()) {
        if (!arm.fingerprint) continue;
        const differing = fingerprintDifferences(first.fingerprint, arm.fingerprint).filter((field) =>
          sameHost.includes(field),
        );
        if (differing.length > 0) {
          ctx.addIssue({
            code: "custom",
            path: ["arms", offset + 1, "fingerprint", differing[0] ?? "host"],
            message: `${record.method} arms must agree on ${sameHost.join(" and ")}, but differ in ${differing.join(", ")}`,
            params: { expected: "arms on one host, or method different-conditions naming the differences" },
          });
        }
      }
    }
    const ab = ["same-pod-ab", "same-node-ab", "chained-ab", "different-conditions"];
    if (ab.includes(record.method) && record.arms.length < 2 && !record.comparison) {
      ctx.addIssue({
        code: "custom",
        path: ["arms"],
        message: `${record.method} compares two arms or states a ratio`,
        params: { expected: "two arms, or a comparison" },
      });
    }
  });
export type BenchRecord = z.infer<typeof BenchRecord>;
export type BenchRecordInput = z.input<typeof BenchRecord>;
