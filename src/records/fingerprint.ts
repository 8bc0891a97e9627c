import { availableParallelism, cpus, hostname, release, totalmem, type } from "node:os";
import { z } from "zod";

/** The machine a server ran on: what decides its speed besides the software. */
export const Machine = z.strictObject({
  cpu: z.string().min(1),
  cores: z.int().positive(),
  memory_gib: z.number().positive(),
  os: z.string().min(1),
});
export type Machine = z.infer<typeof Machine>;

/** What an arm ran on. Two arms are comparable only when these agree outside the compared change. */
export const Fingerprint = z.strictObject({
  host: z.string().optional(),
  hardware: z.string().optional(),
  machine: Machine.optional(),
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

const MACHINE_FIELDS = ["cpu", "cores", "memory_gib", "os"] as const;

/** This machine: CPU model, cores this process may use, memory and OS, as a server started here runs on. */
export function localMachine(): Machine {
  return {
    cpu: cpus()[0]?.model.trim() || "unknown",
    cores: availableParallelism(),
    memory_gib: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${type()} ${release()}`,
  };
}

/**
 * The fingerprint of a server bringup started on this machine: its host name (not the loopback
 * address every machine shares), the machine, the Node.js runtime, plus what the caller knows.
 */
export function localServerFingerprint(fingerprint: Fingerprint): Fingerprint {
  return {
    ...fingerprint,
    host: hostname(),
    machine: localMachine(),
    software: { ...fingerprint.software, node: process.versions.node },
  };
}

/**
 * The fields in which two fingerprints differ, by name (`software.<package>`, `machine.<field>`),
 * in a stable order. A field stated on one side only counts as a difference: an unknown is not a
 * match, and an arm without any fingerprint (a reported figure) differs as `fingerprint`. Records
 * whose fingerprints differ are comparable only under `different-conditions`.
 */
export function fingerprintDifferences(a: Fingerprint | undefined, b: Fingerprint | undefined): string[] {
  if (a === undefined || b === undefined) return ["fingerprint"];
  const differences: string[] = [];
  for (const field of SCALAR_FIELDS) {
    if (a[field] !== b[field]) differences.push(field);
  }
  for (const field of MACHINE_FIELDS) {
    if (a.machine?.[field] !== b.machine?.[field]) differences.push(`machine.${field}`);
  }
  const packages = new Set([...Object.keys(a.software ?? {}), ...Object.keys(b.software ?? {})]);
  for (const name of [...packages].sort()) {
    if (a.software?.[name] !== b.software?.[name]) differences.push(`software.${name}`);
  }
  if (!sameList(a.server_flags, b.server_flags)) differences.push("server_flags");
  return differences;
}

/** A fingerprint field's value as text, "(none)" when not stated; `fingerprint` says whether there is one. */
export function fingerprintField(fingerprint: Fingerprint | undefined, name: string): string {
  if (name === "fingerprint") return fingerprint === undefined ? "none recorded" : "recorded";
  const [group, key] = name.split(".", 2);
  if (group === "software" && key !== undefined) return fingerprint?.software?.[key] ?? "(none)";
  if (group === "machine" && key !== undefined) {
    const value = fingerprint?.machine?.[key as keyof Machine];
    return value === undefined ? "(none)" : String(value);
  }
  const value = fingerprint?.[name as keyof Fingerprint];
  if (value === undefined) return "(none)";
  return Array.isArray(value) ? value.join(" ") : String(value);
}

function sameList(a: string[] | undefined, b: string[] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.length === b.length && a.every((item, index) => item === b[index]);
}
