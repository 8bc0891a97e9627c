import type { Gate, PortManifest } from "../catalog/index.js";
import { formatTokens } from "./figure.js";

/** Words for manifest values; everything numeric comes from the manifest itself. */

const ACCELERATORS: Record<PortManifest["target"]["accelerator"], string> = {
  gaudi2: "Gaudi 2",
  gaudi3: "Gaudi 3",
};

export const EXECUTION_MODE_LABELS: Record<PortManifest["software"]["execution_mode"], string> = {
  lazy: "lazy mode",
  "torch-compile-static": "torch.compile with static shapes",
};

export function acceleratorName(accelerator: PortManifest["target"]["accelerator"]): string {
  return ACCELERATORS[accelerator];
}

/** Removes float noise from a scaled value (1020 / 1000, 0.007 * 100) before printing. */
function clean(value: number): number {
  return Number(value.toPrecision(12));
}

/** Billions of parameters: "816B", "1.02T". */
export function formatParams(billions: number): string {
  return billions >= 1000 ? `${clean(billions / 1000)}T` : `${clean(billions)}B`;
}

export function formatWeightFormat(format: string): string {
  return format.toUpperCase();
}

const ARCHITECTURES = { moe: "MoE", dense: "dense" } as const;

/** The short model description of the index, "816B MoE, MXFP4", from whatever the manifest states. */
export function modelSummary(model: PortManifest["model"]): string {
  const size = [
    model.total_params_b === undefined ? undefined : formatParams(model.total_params_b),
    model.architecture === undefined ? undefined : ARCHITECTURES[model.architecture],
  ].filter((part) => part !== undefined);
  const parts = size.length > 0 ? [size.join(" ")] : [];
  if (model.weight_formats !== undefined) parts.push(model.weight_formats.map(formatWeightFormat).join(", "));
  return parts.join(", ");
}

/** Size with active parameters and context: "1.02T total, 32B active, MoE, context 256K tokens". */
export function modelSize(model: PortManifest["model"]): string {
  const parts: string[] = [];
  if (model.total_params_b !== undefined) parts.push(`${formatParams(model.total_params_b)} total`);
  if (model.active_params_b !== undefined) parts.push(`${formatParams(model.active_params_b)} active`);
  if (model.architecture !== undefined) parts.push(ARCHITECTURES[model.architecture]);
  if (model.context_length !== undefined) parts.push(`context ${formatTokens(model.context_length)} tokens`);
  return parts.length > 0 ? parts.join(", ") : "not stated by the source";
}

function plural(count: number, one: string, many: string): string {
  return `${count} ${count === 1 ? one : many}`;
}

/** "8 cards, 1 node" (the accelerator is named separately where it matters). */
export function cardsAndNodes(cards: number, nodes: number): string {
  return `${plural(cards, "card", "cards")}, ${plural(nodes, "node", "nodes")}`;
}

type Variant = PortManifest["target"]["variants"][number];

/** "two-node FP8 (16 cards, 2 nodes, FP8)". */
export function variantSummary(variant: Variant): string {
  const parts = [cardsAndNodes(variant.cards, variant.nodes)];
  if (variant.weight_format !== undefined) parts.push(formatWeightFormat(variant.weight_format));
  return `${variant.name} (${parts.join(", ")})`;
}

/** The index's "Runs on": the shipped layout, then documented and further variants. */
export function runsOn(target: PortManifest["target"]): string {
  let text = `${cardsAndNodes(target.cards, target.nodes)} of ${acceleratorName(target.accelerator)}`;
  const documented = target.variants.filter((v) => v.documented).map(variantSummary);
  const shipped = target.variants.filter((v) => !v.documented).map(variantSummary);
  if (shipped.length > 0) text += `; also ${shipped.join("; ")}`;
  if (documented.length > 0) text += `; documented: ${documented.join("; ")}`;
  return text;
}

export function statusText(status: PortManifest["status"]): string {
  return status.note === undefined ? status.state : `${status.state}: ${status.note}`;
}

export const GATE_NAMES: Record<Gate["kind"], string> = {
  perplexity: "Perplexity",
  needles: "Needles",
  "bit-identical-decode": "Bit-identical decode",
  "kv-capacity": "KV capacity",
  "weights-bit-identity": "Weights bit identity",
  "device-logprobs": "Device vs reference",
};

/** The pass condition of a gate in words, with the manifest's thresholds. */
export function gateThreshold(gate: Gate): string {
  switch (gate.kind) {
    case "perplexity":
      return `within ${clean(gate.max_relative_diff * 100)}% of ${gate.reference}`;
    case "needles":
      return `at least ${gate.min_retrieved} of ${gate.needles} needles retrieved at ${gate.contexts.map(formatTokens).join(", ")} tokens`;
    case "bit-identical-decode":
      return `${gate.compare} decode bit-identical with ${gate.sampling.join(" and ")} sampling`;
    case "kv-capacity":
      return `${clean(gate.expected_ratio)}x the token capacity of a full-attention KV layout, within ${clean(gate.tolerance * 100)}%`;
    case "weights-bit-identity":
      return `${gate.conversion} bit-identical to its source`;
    case "device-logprobs":
      return `${gate.device} within ${gate.max_logprob_diff} nats of the reference engine's prompt logprobs${gate.window_tokens !== undefined ? ` over corpus windows of ${gate.window_tokens} tokens` : ""}, greedy tokens close (top ${gate.top_k})`;
  }
}
