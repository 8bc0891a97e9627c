import type { LoadedPort } from "../catalog/index.js";
import { GATE_NAMES, gateThreshold } from "./facts.js";
import { code, table, text } from "./markdown.js";
import { recordCells } from "./reference-run.js";

/**
 * The port's device check: its device model code (device-plugin/, served by vLLM on the CPU)
 * against the reference engine on the tiny checkpoint, with the latest record, and exactly which
 * parts vLLM served and which were tested block by block instead; nothing when the manifest has
 * no `reference.device_check`.
 */
export function renderDeviceCheck(port: LoadedPort): string | undefined {
  const spec = port.manifest.reference?.device_check;
  if (spec === undefined) return renderDeviceBlocks(port);
  const blocks = spec.block_by_block ?? [];
  return [
    "### Device code on vLLM (CPU)",
    "",
    text(
      `bringup device check ${port.id} serves the tiny reference checkpoint with ${spec.device} and the same directory with the reference engine, and compares prompt logprobs and greedy tokens.`,
    ),
    "",
    table(
      ["Check", "Passes when", "Result", "Record"],
      [[text(GATE_NAMES[spec.kind]), text(gateThreshold(spec)), ...recordCells(port, spec.record)]],
    ),
    "",
    "Served by vLLM:",
    "",
    ...spec.served.map((part) => `- ${text(part)}`),
    "",
    blocks.length === 0
      ? "Tested block by block instead: nothing; every part ran inside vLLM."
      : "Tested block by block against the engine instead (vLLM's CPU backend cannot run them):",
    ...(blocks.length === 0 ? [] : ["", ...blocks.map((part) => `- ${text(part)}`)]),
    "",
    `The plugin's code: ${code("device-plugin/")}.`,
  ].join("\n");
}

/**
 * A port vLLM does not serve here (`reference.device_blocks`): why, which of the plugin's blocks
 * are checked one by one against the engine instead, and the latest record of that check.
 */
function renderDeviceBlocks(port: LoadedPort): string | undefined {
  const spec = port.manifest.reference?.device_blocks;
  if (spec === undefined) return undefined;
  return [
    "### Device code, block by block",
    "",
    text(`Not served by vLLM: ${spec.not_served}`),
    "",
    text(
      `bringup device check ${port.id} instead runs the plugin's ${spec.test} under device-plugin/: the reference engine dumps what it computed over the tiny checkpoint and a fixed prompt (bringup device blocks), and each of the plugin's plain-PyTorch blocks runs on the engine's own input to it, its output compared with the engine's.`,
    ),
    "",
    table(
      ["Check", "Passes when", "Result", "Record"],
      [
        [
          "block by block",
          text("every block's largest |plugin - engine| within the test's stated tolerance"),
          ...recordCells(port, spec.record),
        ],
      ],
    ),
    "",
    "Checked block by block against the engine:",
    "",
    ...spec.blocks.map((part) => `- ${text(part)}`),
    "",
    `The plugin's code: ${code("device-plugin/")}.`,
  ].join("\n");
}
