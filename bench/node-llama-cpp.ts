/**
 * node-llama-cpp for the benches' llama.cpp arms. It is not part of the default install (its CPU
 * binaries are about 80 MB): the first bench that needs it installs it into .cache/bench-deps/ and
 * says so.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/** The part of node-llama-cpp's API the benches use. */
export interface LlamaSequence {
  /** Evaluates the tokens, then yields each sampled token (its id) and feeds it back. */
  evaluate(tokens: never, options: { temperature: number; yieldEogToken: boolean }): AsyncIterable<number>;
  dispose(): void;
}
export interface LlamaContext {
  getSequence(): LlamaSequence;
  dispose(): Promise<void>;
}
export interface LlamaModel {
  createContext(options: object): Promise<LlamaContext>;
  dispose(): Promise<void>;
}
export interface Llama {
  loadModel(options: { modelPath: string; gpuLayers: number }): Promise<LlamaModel>;
  dispose(): Promise<void>;
}
export interface NodeLlamaCpp {
  getLlama(options: object): Promise<Llama>;
}

const NODE_LLAMA_CPP = "3.21.1";

/**
 * node-llama-cpp from node_modules when present, else from .cache/bench-deps/, installing it there
 * first (with only the CPU binaries for this platform) from the npm registry.
 */
export async function nodeLlamaCpp(): Promise<NodeLlamaCpp> {
  const specifier = "node-llama-cpp";
  try {
    return (await import(specifier)) as NodeLlamaCpp;
  } catch {
    // Not installed with the project: use or make the bench's own copy.
  }
  const prefix = join(import.meta.dirname, "..", ".cache", "bench-deps");
  const entry = join(prefix, "node_modules", "node-llama-cpp", "dist", "index.js");
  if (!existsSync(entry)) {
    const binaries = `@node-llama-cpp/${process.platform}-${process.arch}@${NODE_LLAMA_CPP}`;
    process.stdout.write(
      `installing node-llama-cpp@${NODE_LLAMA_CPP} and ${binaries} into ${prefix} for the llama.cpp arm (once)\n`,
    );
    execFileSync(
      "npm",
      [
        "install",
        "--prefix",
        prefix,
        "--no-save",
        "--omit=optional",
        "--no-audit",
        "--no-fund",
        `node-llama-cpp@${NODE_LLAMA_CPP}`,
        binaries,
      ],
      { stdio: "inherit" },
    );
  }
  return (await import(pathToFileURL(entry).href)) as NodeLlamaCpp;
}
