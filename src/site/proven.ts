import {
  type LoadedPort,
  PROOF_LEVEL_NAMES,
  type Proof,
  type ProofState,
  provenLevels,
} from "../catalog/index.js";
import { DEVICE_GATE } from "../recipes/index.js";
import { figureLink } from "./figure.js";
import { code, text } from "./markdown.js";

const STATE_WORDS: Record<ProofState, string> = {
  passed: "yes",
  failed: "no: the latest run failed",
  partial: "not yet: some gates have no record",
  none: "not yet",
  "not-applicable": "no: the port has no engine model code",
};

/** What is missing when a level has no record at all, so the reader knows what would prove it. */
const NONE_YET: Record<Proof["level"], string> = {
  engine: "no reference gate has a record; `bringup up` makes them",
  "vllm-cpu": `no record of the ${DEVICE_GATE} gate yet`,
  blocks: "no record of the block-by-block check yet; `bringup device check` makes it",
  device: "the recipe has not run on a device",
};

/**
 * A level as a line: its name, whether it holds, and links to the records it rests on; a port that
 * vLLM does not serve says why at the vllm-cpu level.
 */
function line(proof: Proof, from: string, notServed: string | undefined): string {
  const records = proof.records.map((record) => figureLink(code(record.id), record, from));
  const declaredNotServed = proof.level === "vllm-cpu" && notServed !== undefined && proof.state === "none";
  const missing = declaredNotServed ? `not served by vLLM: ${notServed}` : NONE_YET[proof.level];
  const why = proof.state === "none" ? ` (${text(missing)})` : "";
  const links = records.length > 0 ? `: ${records.join(", ")}` : "";
  const name = PROOF_LEVEL_NAMES[proof.level];
  const word = declaredNotServed ? "no" : STATE_WORDS[proof.state];
  return `${text(`${name.charAt(0).toUpperCase()}${name.slice(1)}:`)} **${text(word)}**${why}${links}`;
}

/**
 * Beside the Ports page's status claim, what this repository proves about the port: one line per
 * level, each linking the records it rests on. `from` is the page the links start from.
 */
export function renderProven(port: LoadedPort, from: string): string[] {
  const notServed = port.manifest.reference?.device_blocks?.not_served;
  return ["- **Proven here.**", ...provenLevels(port).map((proof) => `  - ${line(proof, from, notServed)}`)];
}
