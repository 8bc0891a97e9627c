import { resolve } from "node:path";
import type { Command } from "commander";
import { loadCatalog } from "../../catalog/index.js";
import { DEVICE_BLOCKS_TOKENS, type DeviceCheckResult, deviceBlocks, deviceCheck } from "../../flow/index.js";
import { projectRoot } from "../root.js";
import { untilSignalled } from "../signals.js";
import { positiveInt } from "./bench-workload.js";

interface DeviceFlags {
  python?: string;
  fault?: string;
  record: boolean;
  json?: boolean;
}

export function registerDevice(program: Command): void {
  const device = program
    .command("device")
    .description("the ports' device model code (device-plugin/, a vLLM plugin) against the reference engine");
  device
    .command("check [ports...]")
    .description(
      "serve each port's tiny checkpoint with real vLLM on the CPU and the plugin, and the same directory with the reference engine; run the port's device-logprobs gate and record it (default: every port with a reference.device_check)",
    )
    .option(
      "--python <path>",
      "the Python of the venv with the pinned vLLM and the plugin (default: .cache/device-venv/bin/python, made by device-plugin/scripts/setup-venv.sh)",
    )
    .option("--fault <name>", "serve a deliberately wrong plugin (BRINGUP_VLLM_FAULT), e.g. rope-pairing")
    .option("--no-record", "do not append the records to the port's local results")
    .option("--json", "print the results as JSON")
    .action(async (ports: string[], flags: DeviceFlags, command: Command) => {
      const root = projectRoot(command);
      const ids =
        ports.length > 0
          ? ports
          : (await loadCatalog(root)).ports
              .filter((p) => p.manifest.reference?.device_check)
              .map((p) => p.id);
      const controller = new AbortController();
      void untilSignalled().then(() => controller.abort());
      const results: DeviceCheckResult[] = [];
      for (const id of ids) {
        if (controller.signal.aborted) break;
        const result = await deviceCheck({
          root,
          portId: id,
          record: flags.record,
          signal: controller.signal,
          ...(flags.python !== undefined ? { python: resolve(flags.python) } : {}),
          ...(flags.fault !== undefined ? { fault: flags.fault } : {}),
          onProgress: (line) => process.stderr.write(`${id}: ${line}\n`),
        });
        results.push(result);
        if (!flags.json) {
          process.stdout.write(`${id}: ${result.outcome.status}: ${result.outcome.summary}\n`);
          if (result.record) process.stdout.write(`recorded ${result.record.id}\n`);
        }
      }
      if (flags.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
      if (results.length < ids.length || results.some((r) => r.outcome.status !== "passed"))
        process.exitCode = 1;
    });
  device
    .command("blocks <port>")
    .description(
      "run the reference engine on the port's tiny checkpoint over a fixed prompt (the corpus's first tokens) and write each layer's output, the embeddings and the logits to a safetensors file, for the device plugin's block-by-block checks (device-plugin/tests/blocks.py)",
    )
    .requiredOption("--out <file>", "the safetensors file to write (atomically)")
    .option("--tokens <n>", "prompt tokens", positiveInt("--tokens"), DEVICE_BLOCKS_TOKENS)
    .action(async (portId: string, flags: { out: string; tokens: number }, command: Command) => {
      const result = await deviceBlocks({
        root: projectRoot(command),
        portId,
        out: resolve(flags.out),
        tokens: flags.tokens,
      });
      process.stdout.write(
        `${portId}: wrote ${result.tensors.length} tensors over ${result.tokens} tokens of ${result.modelDir} to ${result.out}\n`,
      );
    });
}
