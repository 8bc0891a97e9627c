import { BringupError } from "../../common/errors.js";
import type { ModelConfig } from "../architecture.js";
import {
  type KvCachePlan,
  kvBytesPerSequence,
  kvTokenCapacity,
  planKvCache,
  splitKvBudget,
  unitBytes,
} from "../cache/capacity.js";
import type { LayerStates } from "../cache/state-spec.js";
import { KV_LAYOUT_NAMES, type KvLayout } from "../cache/state-spec.js";
import type { CausalLM } from "../model/causal-lm.js";
import type { ForwardTap } from "../model/model.js";
import type { SpecDecodeStats } from "./drafting.js";

export interface EngineOptions {
  /** Most sequences running at once (default 64). */
  readonly maxNumSeqs?: number;
  /** Longest prompt + output, in tokens (default: the model's max_position_embeddings). */
  readonly maxModelLen?: number;
  /** Tokens per KV block (default 16). */
  readonly blockSize?: number;
  /**
   * KV cache memory budget in bytes (default: room for maxNumSeqs max-length sequences in the
   * chosen layout, at most 1 GiB).
   */
  readonly kvCacheBytes?: number;
  /**
   * How sliding-window layers keep their KV (default "window-sized"): only the window plus the
   * tokens in flight, as a ring of blocks; or "full": every position, with a sliding mask.
   */
  readonly kvLayout?: KvLayout;
  /** Most tokens one step runs (prefill is chunked to fit; default max(2048, maxNumSeqs)). */
  readonly maxNumBatchedTokens?: number;
  /** Threads for matmuls, this one included (default: all cores). */
  readonly threads?: number;
  /**
   * Use the WebAssembly SIMD matmul tile (default true where supported; BRINGUP_ENGINE_SIMD=0 also
   * turns it off). false gives the plain kernel, whose sums equal the scalar reference bit for bit.
   */
  readonly simd?: boolean;
  /** Values of the model's switches (its architecture declares them and their defaults). */
  readonly switches?: Readonly<Record<string, string>>;
  /**
   * Tokens the model's draft head (its MTP layer) proposes per step for speculative decoding
   * (default 0: off); SPECULATIVE_UNAVAILABLE when the model has no draft head.
   */
  readonly speculativeTokens?: number;
  /** Sees every step's intermediate values (model/model.ts ForwardTap); for block-by-block checks. */
  readonly tap?: ForwardTap;
}

/** Figures for /metrics. */
export interface EngineStats {
  readonly running: number;
  readonly waiting: number;
  /** KV blocks held by requests, summed over the paged cache groups. */
  readonly kvBlocksUsed: number;
  /** KV blocks in the cache, summed over the paged cache groups. */
  readonly kvBlocksTotal: number;
  /** Per-sequence state slots held by requests (0 when no layer keeps a state). */
  readonly stateSlotsUsed: number;
  /** Per-sequence state slots planned in the budget. */
  readonly stateSlotsTotal: number;
  /** Fraction of the KV cache's bytes held by requests (groups' blocks differ in size), 0 to 1. */
  readonly kvCacheUsage: number;
  /** Tokens of context the KV cache holds at max_model_len across all sequences (see EngineLimits). */
  readonly kvTokenCapacity: number;
  readonly blockSize: number;
  readonly preemptions: number;
  readonly promptTokensTotal: number;
  readonly generationTokensTotal: number;
  /** Speculative decoding's counters, when it is on. */
  readonly specDecode?: SpecDecodeStats;
}

/** The limits the engine runs under, resolved from EngineOptions. */
export interface EngineLimits {
  readonly maxNumSeqs: number;
  readonly maxModelLen: number;
  readonly blockSize: number;
  /** KV blocks summed over the paged cache groups. */
  readonly kvBlocks: number;
  /** Per-sequence state slots (as many sequences as may hold a recurrent state at once). */
  readonly stateSlots: number;
  readonly maxNumBatchedTokens: number;
  readonly kvLayout: KvLayout;
  /** The KV budget in bytes the groups were sized from. */
  readonly kvCacheBytes: number;
  /**
   * Tokens of context the cache holds at max_model_len: how many max-length sequences fit (the
   * fewest over groups), times the tokens one of them spans in full-storage blocks. With only
   * full-attention layers it is exactly kvBlocks x blockSize.
   */
  readonly kvTokenCapacity: number;
  /** One entry per group of layers sharing block tables. */
  readonly kvGroups: readonly KvGroupLimits[];
}

/** A cache group as the limits report it. */
export interface KvGroupLimits {
  /**
   * The kind of the group's first state ("full", "sliding-window" (a ring), "sliding-mask",
   * "latent", ...), or "state-slot" for the pool of per-sequence slots.
   */
  readonly kind: string;
  readonly numLayers: number;
  /** Blocks (or slots) in the group. */
  readonly blocks: number;
  /** Blocks in the ring one sequence cycles through (0: no ring, it grows with the sequence, or slots). */
  readonly ringBlocks: number;
  /** Bytes of one block (or slot) over the group's layers. */
  readonly bytesPerBlock: number;
}

/**
 * The limits `options` give for `model` and its switches' values, and its states' plan with each
 * pool's units; ENGINE_OPTIONS_INVALID names a bad option, KV_BUDGET_TOO_SMALL a budget that
 * leaves a pool without a unit.
 */
export function resolveLimits(
  network: CausalLM,
  config: ModelConfig,
  options: EngineOptions,
  /** States of layers beyond the model's (a draft head's), planned after them. */
  extraStates: (switches: ReadonlyMap<string, string>) => readonly LayerStates[] = () => [],
): { limits: EngineLimits; switches: ReadonlyMap<string, string>; plan: KvCachePlan; units: number[] } {
  const opt = (name: string, value: number | undefined, fallback: number, min = 1): number => {
    const v = value ?? fallback;
    if (!Number.isInteger(v) || v < min) {
      throw new BringupError(
        "ENGINE_OPTIONS_INVALID",
        `${name} must be an integer >= ${min}, got ${value}.`,
        {
          subject: name,
        },
      );
    }
    return v;
  };
  const maxNumSeqs = opt("max_num_seqs", options.maxNumSeqs, 64);
  const maxModelLen = opt("max_model_len", options.maxModelLen, config.maxPositionEmbeddings);
  const blockSize = opt("block_size", options.blockSize, 16);
  const maxNumBatchedTokens = opt(
    "max_num_batched_tokens",
    options.maxNumBatchedTokens,
    Math.max(2048, maxNumSeqs),
  );
  const kvLayout = options.kvLayout ?? "window-sized";
  if (!KV_LAYOUT_NAMES.includes(kvLayout)) {
    throw new BringupError(
      "ENGINE_OPTIONS_INVALID",
      `kv_layout must be one of ${KV_LAYOUT_NAMES.join(", ")}, got ${String(kvLayout)}.`,
      { subject: "kv_layout" },
    );
  }
  const switches = resolveSwitches(network, options.switches ?? {});
  const plan = planKvCache([...network.states(switches), ...extraStates(switches)], kvLayout, blockSize);
  const wanted = maxNumSeqs * kvBytesPerSequence(plan.pools, maxModelLen);
  const budget = opt("kv_cache_bytes", options.kvCacheBytes, Math.min(wanted, 1 << 30));
  const units = splitKvBudget(plan.pools, budget, maxModelLen);
  plan.pools.forEach((p, i) => {
    if ((units[i] as number) < 1) {
      const oneEach = plan.pools.reduce((s, x) => s + unitBytes(x), 0);
      throw new BringupError(
        "KV_BUDGET_TOO_SMALL",
        `a KV budget of ${budget} bytes leaves no block of ${blockSize} tokens for the ${p.kind} layers (one block in every cache group takes ${oneEach} bytes); raise it.`,
      );
    }
  });
  const slots = plan.pools.findIndex((p) => p.pool === "slots");
  const limits: EngineLimits = {
    maxNumSeqs,
    maxModelLen,
    blockSize,
    kvBlocks: units.reduce((a, b, i) => a + (i === slots ? 0 : b), 0),
    stateSlots: slots < 0 ? 0 : (units[slots] as number),
    maxNumBatchedTokens,
    kvLayout,
    kvCacheBytes: budget,
    kvTokenCapacity: kvTokenCapacity(plan.pools, units, maxModelLen, blockSize),
    kvGroups: plan.pools.map((p, i) => ({
      kind: p.pool === "slots" ? "state-slot" : p.kind,
      numLayers: p.layers.length,
      blocks: units[i] as number,
      ringBlocks: p.pool === "slots" ? 0 : p.placement.ringBlocks,
      bytesPerBlock: unitBytes(p),
    })),
  };
  return { limits, switches, plan, units };
}

/**
 * The value of each of the model's switches: the option's where given, else the switch's default;
 * ENGINE_OPTIONS_INVALID for a switch the model does not declare or a value it does not allow.
 */
function resolveSwitches(
  model: CausalLM,
  given: Readonly<Record<string, string>>,
): ReadonlyMap<string, string> {
  const values = new Map(model.switches.map((s) => [s.name, s.default]));
  for (const [name, value] of Object.entries(given)) {
    const declared = model.switches.find((s) => s.name === name);
    if (declared === undefined && name === "mxfp4") {
      throw new BringupError(
        "ENGINE_OPTIONS_INVALID",
        "switch mxfp4 chooses how MXFP4 weights are multiplied, and this model holds no MXFP4 weights; drop the switch, or serve a checkpoint with MXFP4 weights.",
        { subject: name },
      );
    }
    if (declared === undefined) {
      const known = model.switches.map((s) => s.name);
      throw new BringupError(
        "ENGINE_OPTIONS_INVALID",
        `this model has no switch "${name}" (${known.length > 0 ? `it has ${known.join(", ")}` : "it has none"}).`,
        { subject: name },
      );
    }
    if (!declared.values.includes(value)) {
      throw new BringupError(
        "ENGINE_OPTIONS_INVALID",
        `switch ${name} must be one of ${declared.values.join(", ")}, got "${value}".`,
        { subject: name },
      );
    }
    values.set(name, value);
  }
  return values;
}
