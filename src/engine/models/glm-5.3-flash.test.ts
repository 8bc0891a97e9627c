import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { MatmulPool } from "../kernels/pool.js";
import { modelOfFiles } from "../loader/build-model.js";
import type { HostTensor } from "../loader/host-tensor.js";
import type { ForwardContext } from "../model/model.js";
import { Rng } from "../tensor/random.js";
import { readCorpus } from "../tiny/corpus.js";
import type { TinyModelFiles } from "../tiny/files.js";
import { glmFlashArchitecture, parseGlmConfig } from "./glm-5.3-flash.js";

const pool = new MatmulPool(1, { simd: false });
afterAll(() => pool.close());

const PORT = parse(readFileSync(join(import.meta.dirname, "../../../ports/glm-5.3-flash/port.yaml"), "utf8"))
  .reference.config;
/** The port's tiny config with Kimi Linear's shared experts (two, as num_shared_experts counts them). */
const SHARED = { ...PORT, num_shared_experts: 2, routed_scaling_factor: 2.5 };

/**
 * vLLM's KimiMoE (`model_executor/models/kimi_linear.py`) for one token in f64: sigmoid router
 * scores, the top-k chosen on scores plus e_score_correction_bias, weighted by the unbiased scores
 * renormalized (moe_renormalize), the experts' SiLU MLPs (w1 gate, w3 up, w2 down) mixed and
 * multiplied by routed_scaling_factor, plus the shared experts' one MLP (gate/up/down_proj of
 * num_shared_experts x moe_intermediate_size) on the same input, unscaled.
 */
function kimiMoe(t: ReadonlyMap<string, HostTensor>, layer: number, x: ArrayLike<number>, shared: boolean) {
  const { hidden_size: H, num_experts: E, num_experts_per_token: k, moe_intermediate_size: I } = SHARED;
  const base = `model.layers.${layer}.block_sparse_moe`;
  const w = (name: string) => (t.get(name) as HostTensor).data as Float32Array;
  const mv = (m: Float32Array, rows: number, cols: number, v: ArrayLike<number>) =>
    Array.from({ length: rows }, (_, r) => {
      let s = 0;
      for (let c = 0; c < cols; c++) s += (m[r * cols + c] as number) * (v[c] as number);
      return s;
    });
  const silu = (v: number) => v / (1 + Math.exp(-v));
  const mlp = (gate: string, up: string, down: string, width: number) => {
    const g = mv(w(gate), width, H, x);
    const u = mv(w(up), width, H, x);
    return mv(
      w(down),
      H,
      width,
      g.map((a, i) => silu(a) * (u[i] as number)),
    );
  };
  const scores = mv(w(`${base}.gate.weight`), E, H, x).map((l) => 1 / (1 + Math.exp(-l)));
  const bias = w(`${base}.gate.e_score_correction_bias`);
  const chosen = scores
    .map((s, e) => [s + (bias[e] as number), e] as const)
    .sort((a, b) => b[0] - a[0] || a[1] - b[1])
    .slice(0, k)
    .map(([, e]) => e);
  const total = chosen.reduce((a, e) => a + (scores[e] as number), 0);
  const out = new Array<number>(H).fill(0);
  for (const e of chosen) {
    const p = `${base}.experts.${e}`;
    const y = mlp(`${p}.w1.weight`, `${p}.w3.weight`, `${p}.w2.weight`, I);
    const weight = ((scores[e] as number) / total) * SHARED.routed_scaling_factor;
    for (let i = 0; i < H; i++) out[i] = (out[i] as number) + weight * (y[i] as number);
  }
  if (!shared) return out;
  const s = `${base}.shared_experts`;
  const y = mlp(`${s}.gate_proj.weight`, `${s}.up_proj.weight`, `${s}.down_proj.weight`, 2 * I);
  return out.map((v, i) => v + (y[i] as number));
}

describe("GLM-5.3-Flash's mixture of experts with Kimi Linear's shared experts", () => {
  it("reads num_shared_experts as one MLP of their combined width", () => {
    expect(parseGlmConfig(SHARED).sharedIntermediateSize).toBe(64);
    expect(parseGlmConfig(PORT).sharedIntermediateSize).toBe(0);
  });

  it("adds the shared experts to the routed experts' scaled mix, as vLLM's KimiMoE", async () => {
    const files = glmFlashArchitecture.tinyModel?.(SHARED, await readCorpus()) as TinyModelFiles;
    expect(files.tensors.has("model.layers.1.block_sparse_moe.shared_experts.down_proj.weight")).toBe(true);
    const layer = modelOfFiles("kimi", files, glmFlashArchitecture).model.layers[1];
    const H = SHARED.hidden_size;
    const x = new Rng(3).fillNormal(new Float32Array(5 * H), 1);
    const got = layer?.ffn.forward(x, { pool } as unknown as ForwardContext) as Float32Array;
    for (let t = 0; t < 5; t++) {
      const token = x.subarray(t * H, (t + 1) * H);
      const want = kimiMoe(files.tensors, 1, token, true);
      const scale = Math.max(...want.map(Math.abs));
      const diff = Math.max(...want.map((v, i) => Math.abs(v - (got[t * H + i] as number))));
      expect(diff / scale).toBeLessThan(1e-5);
      // Without the shared experts the output is far from this.
      const routedOnly = kimiMoe(files.tensors, 1, token, false);
      expect(
        Math.max(...want.map((v, i) => Math.abs(v - (routedOnly[i] as number)))) / scale,
      ).toBeGreaterThan(1e-2);
    }
  });
});
