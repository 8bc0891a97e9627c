import { z } from "zod";

/** What an arm ran on. Two arms are comparable only when these agree outside the compared change. */
export const Fingerprint = z.strictObject({
  host: z.string().optional(),
  hardware: z.string().optional(),
  software: z.record(z.string(), z.string()).optional(),
  image: z.string().optional(),
  server_flags: z.array(z.string()).optional(),
  weights_checksum: z.string().optional(),
  workload_hash: z.string().optional(),
  tool_version: z.string().optional(),
});
export type Fingerprint = z.infer<typeof Fingerprint>;

const SCALAR_FIELDS = [
  "host",
  "hardware",
  "image",
  "weights_checksum",
  "workload_hash",
  "tool_version",
] as const;

/**
 * The fields in which two fingerprints differ, by name (`software.<package>` for versions), in a
 * stable order. A field stated on one side only counts as a difference: an unknown is not a match.
 * Records whose fingerprints differ are comparable only under `different-conditions`.
 */
export function fingerprintDifferences(a: Fingerprint | undefined, b: Fingerprint | undefined): string[] {
  const left = a ?? {};
  const right = b ?? {};
  const differences: string[] = [];
  for (const field of SCALAR_FIELDS) {
    if (left[field] !== right[field]) differences.push(field);
  }
  const packages = new Set([...Object.keys(left.software ?? {}), ...Object.keys(right.software ?? {})]);
  for (const name of [...packages].sort()) {
    if (left.software?.[name] !== right.software?.[name]) differences.push(`software.${name}`);
  }
  if (!sameList(left.server_flags, right.server_flags)) differences.push("server_flags");
  return differences;
}

function sameList(a: string[] | undefined, b: string[] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.length === b.length && a.every((item, index) => item === b[index]);
}
