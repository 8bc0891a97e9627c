import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { BringupError } from "../common/errors.js";
import { seededRandom } from "./stats.js";

/** One request of a workload: a prompt (text, or token ids sent as they are) and how many tokens to generate. */
export interface WorkloadRequest {
  readonly prompt: string | readonly number[];
  readonly maxTokens: number;
}

export interface Workload {
  readonly name: string;
  readonly requests: readonly WorkloadRequest[];
  /** sha256 of the requests, for the fingerprint's workload_hash: one hash, one workload. */
  readonly hash: string;
}

/** Token ids drawn for random prompts: [low, high), away from the specials most vocabularies put first. */
export interface TokenRange {
  readonly low: number;
  readonly high: number;
}

export const DEFAULT_TOKEN_RANGE: TokenRange = { low: 3, high: 259 };

export function workloadHash(requests: readonly WorkloadRequest[]): string {
  const hash = createHash("sha256");
  for (const request of requests)
    hash.update(`${JSON.stringify(request.prompt)}\u0000${request.maxTokens}\n`);
  return `sha256:${hash.digest("hex")}`;
}

function positiveInt(value: number, name: string): void {
  if (!Number.isInteger(value) || value < 1) {
    throw new BringupError("BENCH_WORKLOAD_INVALID", `${name} must be a positive integer, got ${value}.`, {
      subject: name,
    });
  }
}

function drawTokens(random: () => number, count: number, range: TokenRange): number[] {
  const span = range.high - range.low;
  return Array.from({ length: count }, () => range.low + Math.floor(random() * span));
}

function checkRange(range: TokenRange): void {
  if (
    !Number.isInteger(range.low) ||
    !Number.isInteger(range.high) ||
    range.low < 0 ||
    range.high <= range.low
  ) {
    throw new BringupError(
      "BENCH_WORKLOAD_INVALID",
      `token range [${range.low}, ${range.high}) is empty or not whole numbers; pick ids inside the model's vocabulary.`,
    );
  }
}

/** vLLM's "random" dataset: prompts of random token ids at a fixed input length, a fixed output length. */
export function randomWorkload(options: {
  numPrompts: number;
  inputLen: number;
  outputLen: number;
  seed: number;
  tokens?: TokenRange;
}): Workload {
  positiveInt(options.numPrompts, "num-prompts");
  positiveInt(options.inputLen, "random-input-len");
  positiveInt(options.outputLen, "random-output-len");
  const range = options.tokens ?? DEFAULT_TOKEN_RANGE;
  checkRange(range);
  const random = seededRandom(options.seed);
  const requests = Array.from({ length: options.numPrompts }, () => ({
    prompt: drawTokens(random, options.inputLen, range),
    maxTokens: options.outputLen,
  }));
  return { name: `random-${options.inputLen}-${options.outputLen}`, requests, hash: workloadHash(requests) };
}

/** Prompts that share one random prefix and differ in a random suffix (what prefix caching is measured on). */
export function sharedPrefixWorkload(options: {
  numPrompts: number;
  prefixLen: number;
  suffixLen: number;
  outputLen: number;
  seed: number;
  tokens?: TokenRange;
}): Workload {
  positiveInt(options.numPrompts, "num-prompts");
  positiveInt(options.prefixLen, "prefix-len");
  positiveInt(options.suffixLen, "suffix-len");
  positiveInt(options.outputLen, "output-len");
  const range = options.tokens ?? DEFAULT_TOKEN_RANGE;
  checkRange(range);
  const random = seededRandom(options.seed);
  const prefix = drawTokens(random, options.prefixLen, range);
  const requests = Array.from({ length: options.numPrompts }, () => ({
    prompt: [...prefix, ...drawTokens(random, options.suffixLen, range)],
    maxTokens: options.outputLen,
  }));
  return {
    name: `shared-prefix-${options.prefixLen}-${options.suffixLen}-${options.outputLen}`,
    requests,
    hash: workloadHash(requests),
  };
}

/**
 * A dataset file: JSON Lines, one `{"prompt": "..." | [ids], "output_len"?: N}` per line. Requests
 * are drawn in a seeded order (with repeats when more are asked than the file holds).
 */
export async function datasetWorkload(options: {
  path: string;
  numPrompts: number;
  outputLen: number;
  seed: number;
}): Promise<Workload> {
  positiveInt(options.numPrompts, "num-prompts");
  positiveInt(options.outputLen, "output-len");
  let text: string;
  try {
    text = await readFile(options.path, "utf8");
  } catch (error) {
    throw new BringupError(
      "BENCH_DATASET_UNREADABLE",
      `cannot read dataset ${options.path}; check the path.`,
      {
        subject: options.path,
        cause: error,
      },
    );
  }
  const entries: WorkloadRequest[] = [];
  for (const [index, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    const where = `${options.path}:${index + 1}`;
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch {
      throw new BringupError("BENCH_DATASET_INVALID", `${where} is not JSON; write one object per line.`, {
        subject: where,
      });
    }
    const prompt = (row as { prompt?: unknown }).prompt;
    const outputLen = (row as { output_len?: unknown }).output_len;
    const isIds = Array.isArray(prompt) && prompt.every((id) => Number.isInteger(id) && id >= 0);
    if (!(typeof prompt === "string" && prompt.length > 0) && !(isIds && prompt.length > 0)) {
      throw new BringupError(
        "BENCH_DATASET_INVALID",
        `${where} needs "prompt": a non-empty string or a list of token ids.`,
        { subject: where },
      );
    }
    if (outputLen !== undefined && !(Number.isInteger(outputLen) && (outputLen as number) > 0)) {
      throw new BringupError("BENCH_DATASET_INVALID", `${where}: "output_len" must be a positive integer.`, {
        subject: where,
      });
    }
    entries.push({
      prompt: prompt as string | number[],
      maxTokens: (outputLen as number | undefined) ?? options.outputLen,
    });
  }
  if (entries.length === 0) {
    throw new BringupError("BENCH_DATASET_INVALID", `${options.path} holds no prompts.`, {
      subject: options.path,
    });
  }
  const random = seededRandom(options.seed);
  const requests = Array.from(
    { length: options.numPrompts },
    () => entries[Math.floor(random() * entries.length)] as WorkloadRequest,
  );
  return {
    name: `dataset-${options.path.split("/").pop() ?? "file"}`,
    requests,
    hash: workloadHash(requests),
  };
}
