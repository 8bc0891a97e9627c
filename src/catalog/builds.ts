import type { AbArm, KvLayout, Switches, WeightsConversion } from "./build-schema.js";

/** A build the embedded engine serves: a KV layout, the model's switches, its weights if converted. */
export interface Build {
  readonly kv_layout: KvLayout;
  readonly switches?: Readonly<Record<string, string>>;
  readonly weights?: WeightsConversion;
  /** The most tokens one engine step runs (prefill chunked to fit); unset: the engine's default. */
  readonly max_num_batched_tokens?: number;
  /** Tokens the model's MTP layer drafts per step (speculative decoding); unset: none. */
  readonly speculative_tokens?: number;
}

/** A conversion's stable name: its target and, for FP8, its scale blocks (`fp8-block32`), for MXFP4 a halves layout (`mxfp4-halves`). */
export function conversionKey(conversion: WeightsConversion): string {
  return [
    conversion.to,
    conversion.fp8_block,
    conversion.layout === "halves" ? "halves" : undefined,
    conversion.ranks,
  ]
    .filter((part) => part !== undefined)
    .join("-");
}

/** How a conversion reads in a build's name and a record's arm. */
export function describeConversion(conversion: WeightsConversion): string {
  const blocks = { block32: " with a scale per 32 values", tile128: " with a scale per 128x128 tile" };
  if (conversion.to === "packed") {
    const ranks = conversion.ranks ?? 1;
    return `packed for ${ranks} rank${ranks === 1 ? "" : "s"} and loaded directly`;
  }
  const to = conversion.to === "fp8" ? "FP8 E4M3" : conversion.to.toUpperCase();
  const order = conversion.layout === "halves" ? " with its codes re-laid out in halves order" : "";
  return `converted to ${to}${conversion.fp8_block ? blocks[conversion.fp8_block] : ""}${order}`;
}

/** The reference section's fields an arm's unset fields take. */
export interface BuildDefaults {
  readonly kv_layout: KvLayout;
  readonly switches?: Switches | undefined;
}

/** The build's switches as sorted `name=value` strings. */
export function switchFlags(build: Build): string[] {
  return Object.entries(build.switches ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => `${name}=${value}`);
}

/** The build's weights as a name part: none for the weights the model code writes. */
function weightsParts(build: Build): string[] {
  return build.weights ? [`weights ${describeConversion(build.weights)}`] : [];
}

/** The build's step size as a name part: none for the engine's default. */
function chunkParts(build: Build): string[] {
  return build.max_num_batched_tokens !== undefined
    ? [`prefill in chunks of ${build.max_num_batched_tokens} tokens`]
    : [];
}

const weightsKey = (build: Build): string | null => (build.weights ? conversionKey(build.weights) : null);

/** One string per build: two builds are the same exactly when their keys are. */
export function buildKey(build: Build): string {
  const chunk = build.max_num_batched_tokens ?? null;
  const drafts = build.speculative_tokens;
  return JSON.stringify([
    build.kv_layout,
    switchFlags(build),
    weightsKey(build),
    ...(chunk ? [chunk] : []),
    ...(drafts ? [{ speculative_tokens: drafts }] : []),
  ]);
}

export function describeBuild(build: Build): string {
  return [
    `${build.kv_layout} KV layout`,
    ...switchFlags(build),
    ...weightsParts(build),
    ...chunkParts(build),
    ...(build.speculative_tokens !== undefined ? [`drafting ${build.speculative_tokens} tokens a step`] : []),
  ].join(", ");
}

/** An A/B arm's build: its own fields over the reference section's (its switches merged over them). */
export function abArmBuild(arm: AbArm, reference: BuildDefaults): Build {
  const switches = { ...reference.switches, ...arm.switches };
  return {
    kv_layout: arm.kv_layout ?? reference.kv_layout,
    ...(Object.keys(switches).length > 0 ? { switches } : {}),
    ...(arm.weights ? { weights: arm.weights } : {}),
  };
}

/**
 * What the record calls each arm: its manifest `name`, else what its build has that the other's
 * lacks (`full KV layout`, `mxfp4=unpacked`), so kv_layout-only A/Bs keep their arm names.
 */
export function abArmNames(
  spec: { readonly a: AbArm; readonly b: AbArm },
  reference: BuildDefaults,
): { a: string; b: string } {
  const a = abArmBuild(spec.a, reference);
  const b = abArmBuild(spec.b, reference);
  const differences = (own: Build, other: Build): string[] => {
    const theirs = new Set(switchFlags(other));
    return [
      ...(own.kv_layout !== other.kv_layout ? [`${own.kv_layout} KV layout`] : []),
      ...switchFlags(own).filter((flag) => !theirs.has(flag)),
      ...(weightsKey(own) !== weightsKey(other) ? weightsParts(own) : []),
    ];
  };
  const derived = (own: Build, other: Build) => differences(own, other).join(", ") || describeBuild(own);
  return { a: spec.a.name ?? derived(a, b), b: spec.b.name ?? derived(b, a) };
}
