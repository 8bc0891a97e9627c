// The builds a port's reference section declares (its own, the baseline, gates' and A/B arms').
import {
  abArmBuild,
  abArmNames,
  type Build,
  type Gate as GateSpec,
  type Reference,
} from "../catalog/index.js";
import type { DeclaredBuild } from "./build-check.js";

/** The build a comparing gate runs against: its own baseline over the reference section's. */
export function gateBaseline(spec: GateSpec, reference: Reference): Build | undefined {
  const own = "baseline" in spec ? spec.baseline : undefined;
  if (own === undefined) return reference.baseline;
  return {
    kv_layout: own.kv_layout ?? reference.baseline?.kv_layout ?? reference.kv_layout,
    ...(own.switches !== undefined ? { switches: own.switches } : {}),
    ...(own.weights !== undefined ? { weights: own.weights } : {}),
    ...(own.max_num_batched_tokens !== undefined
      ? { max_num_batched_tokens: own.max_num_batched_tokens }
      : {}),
    ...(own.speculative_tokens !== undefined ? { speculative_tokens: own.speculative_tokens } : {}),
  };
}

/** The port's own build: the reference section's KV layout and switches. */
export function ownBuild(reference: Reference): Build {
  return {
    kv_layout: reference.kv_layout,
    ...(reference.switches !== undefined ? { switches: reference.switches } : {}),
  };
}

/** Every build the reference section serves, with where port.yaml declares it. */
export function declaredBuilds(reference: Reference): DeclaredBuild[] {
  const own = ownBuild(reference);
  return [
    { where: "reference", build: own },
    ...(reference.baseline !== undefined ? [{ where: "reference.baseline", build: reference.baseline }] : []),
    ...reference.gates.flatMap((gate, index) => {
      const build =
        "baseline" in gate && gate.baseline !== undefined ? gateBaseline(gate, reference) : undefined;
      return build === undefined ? [] : [{ where: `reference.gates[${index}].baseline`, build }];
    }),
    ...reference.benchmarks.flatMap((spec, index) =>
      (["a", "b"] as const).map((key) => ({
        where: `reference.benchmarks[${index}].${key}`,
        build: abArmBuild(spec[key], reference),
      })),
    ),
  ];
}

/**
 * One line of what a bring-up of the reference section will run: its gates with the builds they
 * compare, and each A/B by its own arms (which need not be the build and the baseline).
 */
export function describeReferencePlan(portId: string, reference: Reference): string {
  const gates = `${reference.gates.length} gate${reference.gates.length === 1 ? "" : "s"} on the ${reference.kv_layout} KV layout${reference.baseline ? ` (baseline ${reference.baseline.kv_layout})` : ""}`;
  const abs = reference.benchmarks.map((spec) => {
    const names = abArmNames(spec, reference);
    return `${spec.metric}, ${names.b} against ${names.a}`;
  });
  const benchmarks =
    abs.length === 0 ? "no A/B" : `${abs.length} A/B${abs.length === 1 ? "" : "s"}: ${abs.join("; ")}`;
  return `${portId}: ${gates}; ${benchmarks}`;
}
