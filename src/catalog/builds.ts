import type { AbArm, AbBenchmark, KvLayout, Reference } from "./manifest.js";

/** A build the embedded engine serves: a KV layout and the model's switches. */
export interface Build {
  readonly kv_layout: KvLayout;
  readonly switches?: Readonly<Record<string, string>>;
}

/** The reference section's fields an arm's unset fields take. */
export type BuildDefaults = Pick<Reference, "kv_layout" | "switches">;

/** The build's switches as sorted `name=value` strings. */
export function switchFlags(build: Build): string[] {
  return Object.entries(build.switches ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => `${name}=${value}`);
}

/** One string per build: two builds are the same exactly when their keys are. */
export function buildKey(build: Build): string {
  return JSON.stringify([build.kv_layout, switchFlags(build)]);
}

export function describeBuild(build: Build): string {
  return [`${build.kv_layout} KV layout`, ...switchFlags(build)].join(", ");
}

/** An A/B arm's build: its own fields over the reference section's (its switches merged over them). */
export function abArmBuild(arm: AbArm, reference: BuildDefaults): Build {
  const switches = { ...reference.switches, ...arm.switches };
  return {
    kv_layout: arm.kv_layout ?? reference.kv_layout,
    ...(Object.keys(switches).length > 0 ? { switches } : {}),
  };
}

/**
 * What the record calls each arm: its manifest `name`, else what its build has that the other's
 * lacks (`full KV layout`, `mxfp4=unpacked`), so kv_layout-only A/Bs keep their arm names.
 */
export function abArmNames(
  spec: Pick<AbBenchmark, "a" | "b">,
  reference: BuildDefaults,
): { a: string; b: string } {
  const a = abArmBuild(spec.a, reference);
  const b = abArmBuild(spec.b, reference);
  const differences = (own: Build, other: Build): string[] => {
    const theirs = new Set(switchFlags(other));
    return [
      ...(own.kv_layout !== other.kv_layout ? [`${own.kv_layout} KV layout`] : []),
      ...switchFlags(own).filter((flag) => !theirs.has(flag)),
    ];
  };
  const derived = (own: Build, other: Build) => differences(own, other).join(", ") || describeBuild(own);
  return { a: spec.a.name ?? derived(a, b), b: spec.b.name ?? derived(b, a) };
}
