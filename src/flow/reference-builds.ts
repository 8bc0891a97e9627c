// The builds a port's reference section declares (its own, the baseline, gates' and A/B arms').
import { abArmBuild, type Build, type Gate as GateSpec, type Reference } from "../catalog/index.js";
import type { DeclaredBuild } from "./build-check.js";

/** The build a comparing gate runs against: its own baseline over the reference section's. */
export function gateBaseline(spec: GateSpec, reference: Reference): Build | undefined {
  const own = "baseline" in spec ? spec.baseline : undefined;
  if (own === undefined) return reference.baseline;
  return {
    kv_layout: own.kv_layout ?? reference.baseline?.kv_layout ?? reference.kv_layout,
    ...(own.switches !== undefined ? { switches: own.switches } : {}),
    ...(own.weights !== undefined ? { weights: own.weights } : {}),
  };
}

/** Every build the reference section serves, with where port.yaml declares it. */
export function declaredBuilds(reference: Reference): DeclaredBuild[] {
  const own: Build = {
    kv_layout: reference.kv_layout,
    ...(reference.switches !== undefined ? { switches: reference.switches } : {}),
  };
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
