import { type BenchRecordInput, RECORD_SCHEMA_VERSION } from "../record.js";

/** A valid single-run record `demo/<slug>` for store tests, with any field overridden. */
export function demoRecord(slug: string, overrides: Partial<BenchRecordInput> = {}): BenchRecordInput {
  return {
    schema: RECORD_SCHEMA_VERSION,
    id: `demo/${slug}`,
    port: "demo",
    metric: "decode_tok_s",
    label: "decode at one stream",
    unit: "tok/s",
    method: "single-run",
    source: { kind: "measured", tool: "bringup bench" },
    arms: [{ name: "port", samples: [43.9] }],
    recorded_at: "2026-01-01T00:00:00Z",
    ...overrides,
  };
}
