import { readFileSync } from "node:fs";

/** The machine's CPU time so far, in clock ticks: all of it, and what the hypervisor stole. */
export interface CpuTicks {
  readonly total: number;
  readonly steal: number;
}

/**
 * /proc/stat's first line summed (user, nice, system, idle, iowait, irq, softirq, steal; guest
 * time is already inside user), or undefined where there is none (not Linux).
 */
export function cpuTicks(): CpuTicks | undefined {
  let line: string | undefined;
  try {
    line = readFileSync("/proc/stat", "latin1").split("\n", 1)[0];
  } catch {
    return undefined;
  }
  const fields = line?.startsWith("cpu ") ? line.trim().split(/\s+/).slice(1, 9).map(Number) : [];
  if (fields.length < 8 || fields.some((f) => !Number.isFinite(f))) return undefined;
  return { total: fields.reduce((a, b) => a + b, 0), steal: fields[7] as number };
}

/**
 * The share of the machine's CPU time the hypervisor gave to other guests between two readings
 * (on a shared VM a figure measured while it was high is low for that reason, not the code's), as
 * "12%", or "n/a" without readings or with no tick between them.
 */
export function describeSteal(before: CpuTicks | undefined, after: CpuTicks | undefined): string {
  if (before === undefined || after === undefined || after.total <= before.total) return "n/a";
  return `${((100 * (after.steal - before.steal)) / (after.total - before.total)).toFixed(0)}%`;
}
