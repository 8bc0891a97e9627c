import { resolve } from "node:path";
import type { Command } from "commander";
import { loadCatalog } from "../../catalog/index.js";
import {
  DEVICE_BLOCKS_DECODE,
  DEVICE_BLOCKS_TOKENS,
  deviceBlocks,
  deviceBlocksCheck,
  deviceCheck,
} from "../../flow/index.js";
import { projectRoot } from "../root.js";
import { untilSignalled } from "../signals.js";
import { nonNegativeInt, positiveInt } from "./bench-workload.js";

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
      "serve each port's tiny checkpoint with real vLLM on the CPU and the plugin, and the same directory with the reference engine; run the port's device-logprobs gate and record it; a port vLLM does not serve (reference.device_blocks) has its plugin blocks checked one by one against the engine instead (default: every port with either)",
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
      const catalog = await loadCatalog(root);
      const ids =
        ports.length > 0
          ? ports
          : catalog.ports
              .filter((p) => p.manifest.reference?.device_check ?? p.manifest.reference?.device_blocks)
              .map((p) => p.id);
      const controller = new AbortController();
      void untilSignalled().then(() => controller.abort());
      const results: { port: string; status: string; summary: string; recordId?: string }[] = [];
      for (const id of ids) {
        if (controller.signal.aborted) break;
        const common = {
          root,
          portId: id,
          record: flags.record,
          signal: controller.signal,
          ...(flags.python !== undefined ? { python: resolve(flags.python) } : {}),
        };
        const reference = catalog.ports.find((p) => p.id === id)?.manifest.reference;
        // A port vLLM does not serve here is checked block by block against the engine instead.
        const result =
          reference?.device_check === undefined && reference?.device_blocks !== undefined
            ? await deviceBlocksCheck(common)
            : await deviceCheck({
                ...common,
                ...(flags.fault !== undefined ? { fault: flags.fault } : {}),
                onProgress: (line) => process.stderr.write(`${id}: ${line}\n`),
              }).then((r) => ({
                port: r.port,
                status: r.outcome.status,
                summary: r.outcome.summary,
                record: r.record,
              }));
        const row = {
          port: result.port,
          status: result.status,
          summary: result.summary,
          ...(result.record ? { recordId: result.record.id } : {}),
        };
        results.push(row);
        if (!flags.json) {
          process.stdout.write(`${id}: ${row.status}: ${row.summary}\n`);
          if (row.recordId) process.stdout.write(`recorded ${row.recordId}\n`);
        }
      }
      if (flags.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
      if (results.length < ids.length || results.some((r) => r.status !== "passed")) process.exitCode = 1;
    });
  device
    .command("blocks <port>")
    .description(
      "run the reference engine on the port's tiny checkpoint over a fixed prompt (the corpus's first tokens) and write each layer's output, the embeddings and the logits to a safetensors file, for the device plugin's block-by-block checks (device-plugin/tests/blocks.py)",
    )
    .requiredOption("--out <file>", "the safetensors file to write (atomically)")
    .option("--tokens <n>", "prompt tokens", positiveInt("--tokens"), DEVICE_BLOCKS_TOKENS)
    .option(
      "--decode <n>",
      "greedy decode steps after the prompt",
      nonNegativeInt("--decode"),
      DEVICE_BLOCKS_DECODE,
    )
    .action(
      async (portId: string, flags: { out: string; tokens: number; decode: number }, command: Command) => {
        const result = await deviceBlocks({
          root: projectRoot(command),
          portId,
          out: resolve(flags.out),
          tokens: flags.tokens,
          decode: flags.decode,
        });
        process.stdout.write(
          `${portId}: wrote ${result.tensors.length} tensors over ${result.tokens} prompt tokens and ${result.decode} decode steps of ${result.modelDir} to ${result.out}\n`,
        );
      },
    );
}
