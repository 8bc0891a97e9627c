import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine, type HostTensor, type LoadedModel, readCorpus } from "../../../../src/engine/index.js";
import { mimoTinyModel } from "../../../../src/engine/models/mimo.js";
import { loadFiles } from "./reference.js";

// One sliding-window layer with one head: query/key 8 features (the first 2 rotated), value 4,
// window 4, so a few positions show both a growing and a clipped window.
const H = 16;
const D = 8;
const DV = 4;
const ROTARY = 2;
const WINDOW = 4;
const EPS = 1e-6;
const SINK = 0.75;

function config(sinks: boolean): Record<string, unknown> {
  return {
    model_type: "mimo_v2_flash",
    vocab_size: 300,
    hidden_size: H,
    intermediate_size: 8,
    num_hidden_layers: 1,
    hybrid_layer_pattern: [1],
    moe_layer_freq: [0],
    num_attention_heads: 1,
    num_key_value_heads: 1,
    head_dim: D,
    v_head_dim: DV,
    swa_rope_theta: 10_000,
    partial_rotary_factor: ROTARY / D,
    sliding_window: WINDOW,
    add_swa_attention_sink_bias: sinks,
    layernorm_epsilon: EPS,
    max_position_embeddings: 64,
  };
}

let corpus: string;
let files: ReturnType<typeof mimoTinyModel>;
const engines: Engine[] = [];

beforeAll(async () => {
  corpus = await readCorpus();
  files = mimoTinyModel(config(true), corpus, { seed: 3 });
});
afterAll(async () => {
  await Promise.all(engines.map((e) => e.close()));
});

/** The model's tensors with the MLP silenced and the sink set to SINK (or dropped). */
async function build(sinks: boolean): Promise<LoadedModel> {
  const tensors = new Map(files.tensors);
  const down = tensors.get("model.layers.0.mlp.down_proj.weight") as HostTensor;
  tensors.set("model.layers.0.mlp.down_proj.weight", { ...down, data: new Float32Array(down.data.length) });
  if (sinks)
    tensors.set("model.layers.0.self_attn.attention_sink_bias", {
      dtype: "F32",
      shape: [1],
      data: Float32Array.of(SINK),
    });
  else tensors.delete("model.layers.0.self_attn.attention_sink_bias");
  const cfg = { ...files.config, add_swa_attention_sink_bias: sinks };
  return loadFiles({ ...files, config: cfg, tensors }, sinks ? "with-sink" : "without-sink");
}

/** Each position's log-softmax over the vocabulary as the engine serves it (positions 0 .. n-2). */
async function served(model: LoadedModel, tokens: number[]): Promise<number[][]> {
  const engine = new Engine(model, { threads: 1, maxNumSeqs: 1, maxModelLen: 64 });
  engines.push(engine);
  const vocab = model.config.vocabSize;
  for await (const step of engine.submit({ promptTokenIds: tokens, maxTokens: 0, promptLogprobs: vocab })) {
    if (step.promptLogprobs) {
      return step.promptLogprobs.slice(1).map((p) => {
        const row = new Array<number>(vocab).fill(Number.NaN);
        for (const t of p?.top ?? []) row[t.tokenId] = t.logprob;
        return row;
      });
    }
  }
  throw new Error("no prompt logprobs");
}

/**
 * The layer written out in float64: x = embedding; h = RMSNorm(x); q, k, v = W h; RoPE on the first
 * two features of q and k (angle = position x 1, the first frequency); scores q.k / sqrt(8) over the
 * last 4 positions; p_j = exp(s_j) / (sum_j exp(s_j) + exp(sink)); a = sum_j p_j v_j; x += W_o a; the
 * MLP adds nothing; logits = W_lm RMSNorm(x); their log-softmax.
 */
function byHand(tokens: number[], sink: number | undefined): number[][] {
  const t = (name: string) => (files.tensors.get(name) as HostTensor).data as Float32Array;
  const embed = t("model.embed_tokens.weight");
  const [wq, wk, wv, wo, lm] = [
    t("model.layers.0.self_attn.q_proj.weight"),
    t("model.layers.0.self_attn.k_proj.weight"),
    t("model.layers.0.self_attn.v_proj.weight"),
    t("model.layers.0.self_attn.o_proj.weight"),
    t("lm_head.weight"),
  ];
  const vocab = lm.length / H;
  const matvec = (w: Float32Array, rows: number, x: number[]) =>
    Array.from({ length: rows }, (_, r) =>
      x.reduce((s, xi, c) => s + (w[r * x.length + c] as number) * xi, 0),
    );
  const rms = (x: number[]) => {
    const scale = 1 / Math.sqrt(x.reduce((s, v) => s + v * v, 0) / x.length + EPS);
    return x.map((v) => v * scale);
  };
  const rope = (x: number[], pos: number) => {
    const [a, b] = [x[0] as number, x[1] as number];
    return [a * Math.cos(pos) - b * Math.sin(pos), b * Math.cos(pos) + a * Math.sin(pos), ...x.slice(2)];
  };
  const xs = tokens.map((tok) => Array.from(embed.subarray(tok * H, (tok + 1) * H)));
  const hs = xs.map(rms);
  const qs = hs.map((h, pos) => rope(matvec(wq, D, h), pos));
  const ks = hs.map((h, pos) => rope(matvec(wk, D, h), pos));
  const vs = hs.map((h) => matvec(wv, DV, h));
  return xs.slice(0, -1).map((x, i) => {
    const visible = Array.from({ length: Math.min(WINDOW, i + 1) }, (_, n) => i - n);
    const scores = visible.map(
      (j) =>
        (qs[i] as number[]).reduce((s, q, d) => s + q * ((ks[j] as number[])[d] as number), 0) / Math.sqrt(D),
    );
    const z = scores.reduce((s, v) => s + Math.exp(v), 0) + (sink === undefined ? 0 : Math.exp(sink));
    const a = Array.from({ length: DV }, (_, d) =>
      visible.reduce(
        (s, j, n) => s + (Math.exp(scores[n] as number) / z) * ((vs[j] as number[])[d] as number),
        0,
      ),
    );
    const o = matvec(wo, H, a);
    const logits = matvec(lm, vocab, rms(x.map((v, c) => v + (o[c] as number))));
    const max = Math.max(...logits);
    const lse = max + Math.log(logits.reduce((s, v) => s + Math.exp(v - max), 0));
    return logits.map((v) => v - lse);
  });
}

describe("attention sinks on a sliding-window layer", () => {
  it("add exp(sink) to the softmax denominator and attend nothing, as written out by hand", async () => {
    const tokens = [5, 77, 130, 42, 260, 9, 181, 33];
    const withSink = await served(await build(true), tokens);
    const without = await served(await build(false), tokens);
    const handWith = byHand(tokens, SINK);
    const handWithout = byHand(tokens, undefined);
    const worst = (a: number[][], b: number[][]) =>
      Math.max(...a.flatMap((row, i) => row.map((v, j) => Math.abs(v - ((b[i] as number[])[j] as number)))));
    expect(withSink).toHaveLength(tokens.length - 1);
    expect(worst(withSink, handWith)).toBeLessThan(1e-4);
    expect(worst(without, handWithout)).toBeLessThan(1e-4);
    // The sink takes a real share of every position's attention, so the two models differ plainly.
    expect(worst(withSink, without)).toBeGreaterThan(1e-2);
  });
});
