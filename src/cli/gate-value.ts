import type { GateSummary } from "../flow/index.js";

/**
 * A gate's value as the summary table shows it: a count says what it counts ("0 positions
 * differing between decodes", not "0 count"); a gate that did not run shows the code that stopped it.
 */
export function formatGateValue(gate: GateSummary): string {
  if (gate.status === "not-run") return gate.code ?? "-";
  if (gate.value === undefined) return "-";
  const value = Number.isInteger(gate.value) ? String(gate.value) : gate.value.toFixed(4);
  if (gate.unit === "count") return gate.label === undefined ? value : `${value} ${gate.label.split(",")[0]}`;
  return gate.unit === undefined ? value : `${value} ${gate.unit}`;
}
