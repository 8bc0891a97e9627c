import { BringupError } from "../../common/errors.js";
import type { ModelConfig } from "../config.js";
import { weightAt } from "../kernels/reference.js";
import type { AttentionWeights, DenseMlpWeights, LayerWeights, ModelWeights } from "../model/weights.js";
import { checkWeight, shareArray, type Weight } from "../tensor/weight.js";
import type { HostTensor, TensorLookup } from "./host-tensor.js";

/**
 * Maps HF checkpoint tensor names (llama / qwen / mixtral layout) onto engine weights, checking
 * every shape against the config. `source` names the checkpoint in errors.
 */
export function buildModelWeights(config: ModelConfig, lookup: TensorLookup, source: string): ModelWeights {
  const need = (name: string): HostTensor => {
    const t = lookup(name);
    if (t === undefined) {
      throw new BringupError(
        "MODEL_WEIGHT_MISSING",
        `${source}: tensor ${name} is missing; the checkpoint does not match config.json.`,
        { subject: name },
      );
    }
    return t;
  };
  const H = config.hiddenSize;
  const matrix = (base: string, rows: number, cols: number): Weight =>
    toWeight(base, rows, cols, lookup, need, source);
  const vector = (name: string, length: number): Float32Array => toVector(need(name), name, length, source);
  const optionalVector = (name: string, length: number): Float32Array | undefined => {
    const t = lookup(name);
    return t === undefined ? undefined : toVector(t, name, length, source);
  };
  const mlp = (prefix: string, names: [string, string, string], inter: number): DenseMlpWeights => ({
    gate: matrix(`${prefix}.${names[0]}`, inter, H),
    up: matrix(`${prefix}.${names[1]}`, inter, H),
    down: matrix(`${prefix}.${names[2]}`, H, inter),
  });

  const embed = matrix("model.embed_tokens", config.vocabSize, H);
  const layers: LayerWeights[] = config.layers.map((spec, i) => {
    const p = `model.layers.${i}`;
    const a = spec.attention;
    const qOut = a.numHeads * a.headDim;
    const kOut = a.numKvHeads * a.headDim;
    const vOut = a.numKvHeads * a.vHeadDim;
    const attention: AttentionWeights = {
      q: matrix(`${p}.self_attn.q_proj`, qOut, H),
      k: matrix(`${p}.self_attn.k_proj`, kOut, H),
      v: matrix(`${p}.self_attn.v_proj`, vOut, H),
      o: matrix(`${p}.self_attn.o_proj`, H, a.numHeads * a.vHeadDim),
      ...(a.bias
        ? {
            qBias: vector(`${p}.self_attn.q_proj.bias`, qOut),
            kBias: vector(`${p}.self_attn.k_proj.bias`, kOut),
            vBias: vector(`${p}.self_attn.v_proj.bias`, vOut),
          }
        : {}),
      ...(a.qkNorm
        ? {
            qNorm: vector(`${p}.self_attn.q_norm.weight`, a.headDim),
            kNorm: vector(`${p}.self_attn.k_norm.weight`, a.headDim),
          }
        : {}),
      ...(a.sinks ? { sinks: vector(`${p}.self_attn.sinks`, a.numHeads) } : {}),
    };
    let mlpWeights: LayerWeights["mlp"];
    if (spec.mlp === "dense") {
      mlpWeights = {
        kind: "dense",
        weights: mlp(`${p}.mlp`, ["gate_proj", "up_proj", "down_proj"], config.intermediateSize),
      };
    } else {
      const moe = config.moe;
      if (moe === undefined)
        throw new BringupError(
          "MODEL_CONFIG_INVALID",
          `${source}: layer ${i} is MoE but the config has no experts.`,
        );
      const mixtral = lookup(`${p}.block_sparse_moe.gate.weight`) !== undefined;
      const base = mixtral ? `${p}.block_sparse_moe` : `${p}.mlp`;
      const names: [string, string, string] = mixtral
        ? ["w1", "w3", "w2"]
        : ["gate_proj", "up_proj", "down_proj"];
      const routerBias = optionalVector(`${base}.gate.e_score_correction_bias`, moe.numExperts);
      mlpWeights = {
        kind: "moe",
        weights: {
          router: matrix(`${base}.gate`, moe.numExperts, H),
          ...(routerBias ? { routerBias } : {}),
          experts: Array.from({ length: moe.numExperts }, (_, e) =>
            mlp(`${base}.experts.${e}`, names, moe.intermediateSize),
          ),
        },
      };
    }
    return {
      inputNorm: vector(`${p}.input_layernorm.weight`, H),
      attention,
      postAttentionNorm: vector(`${p}.post_attention_layernorm.weight`, H),
      mlp: mlpWeights,
    };
  });
  const finalNorm = vector("model.norm.weight", H);
  const lmHead =
    config.tieWordEmbeddings && lookup("lm_head.weight") === undefined
      ? embed
      : matrix("lm_head", config.vocabSize, H);
  return { embed, layers, finalNorm, lmHead };
}

function toWeight(
  base: string,
  rows: number,
  cols: number,
  lookup: TensorLookup,
  need: (name: string) => HostTensor,
  source: string,
): Weight {
  // MXFP4 (OCP layout as gpt-oss stores it): `<name>_blocks` [rows, cols/32, 16] of packed E2M1 and
  // `<name>_scales` [rows, cols/32] of E8M0, where <name> is `<base>.weight` or `<base>` itself.
  const mxName = lookup(`${base}.weight_blocks`) !== undefined ? `${base}.weight` : base;
  const blocks = lookup(`${mxName}_blocks`);
  let w: Weight;
  if (blocks !== undefined) {
    const scales = need(`${mxName}_scales`);
    expectShape(blocks, `${mxName}_blocks`, [rows, cols / 32, 16], source);
    expectShape(scales, `${mxName}_scales`, [rows, cols / 32], source);
    w = {
      dtype: "mxfp4",
      rows,
      cols,
      data: share(blocks.data as Uint8Array),
      mxScales: share(scales.data as Uint8Array),
    };
  } else {
    const name = `${base}.weight`;
    const t = need(name);
    expectShape(t, name, [rows, cols], source);
    switch (t.dtype) {
      case "F32":
        w = { dtype: "f32", rows, cols, data: share(t.data) };
        break;
      case "BF16":
        w = { dtype: "bf16", rows, cols, data: share(t.data) };
        break;
      case "F16":
        w = { dtype: "f16", rows, cols, data: share(t.data) };
        break;
      case "F8_E4M3": {
        const s = lookup(`${base}.weight_scale_inv`) ?? lookup(`${base}.weight_scale`);
        if (s === undefined) {
          w = { dtype: "fp8_e4m3", rows, cols, data: share(t.data) };
          break;
        }
        const scaleValues = toFloat32(s);
        const sRows = s.shape.length === 2 ? (s.shape[0] as number) : 1;
        const sCols = s.shape.length === 2 ? (s.shape[1] as number) : 1;
        if (scaleValues.length !== sRows * sCols) {
          throw new BringupError(
            "MODEL_WEIGHTS_MISMATCH",
            `${source}: the scale of ${name} has shape [${s.shape}]; expected a scalar or a 2-D block grid.`,
            { subject: name },
          );
        }
        w = {
          dtype: "fp8_e4m3",
          rows,
          cols,
          data: share(t.data),
          scale: {
            data: shareArray(scaleValues),
            blockRows: Math.ceil(rows / sRows),
            blockCols: Math.ceil(cols / sCols),
          },
        };
        break;
      }
      default:
        throw new BringupError(
          "MODEL_WEIGHT_DTYPE",
          `${source}: ${name} has dtype ${t.dtype}, which a matmul weight cannot have.`,
          { subject: name },
        );
    }
  }
  checkWeight(w, base);
  return w;
}

function toVector(t: HostTensor, name: string, length: number, source: string): Float32Array {
  expectShape(t, name, [length], source);
  return toFloat32(t);
}

/** Small tensors (norms, biases, scales) are decoded to f32 once at load. */
function toFloat32(t: HostTensor): Float32Array {
  if (t.dtype === "F32") return new Float32Array(t.data as Float32Array);
  const n = t.data.length;
  const probe: Weight =
    t.dtype === "BF16"
      ? { dtype: "bf16", rows: 1, cols: n, data: t.data }
      : t.dtype === "F16"
        ? { dtype: "f16", rows: 1, cols: n, data: t.data }
        : { dtype: "fp8_e4m3", rows: 1, cols: n, data: t.data };
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = weightAt(probe, 0, i);
  return out;
}

function expectShape(t: HostTensor, name: string, shape: readonly number[], source: string): void {
  const same = t.shape.length === shape.length && t.shape.every((d, i) => d === shape[i]);
  if (!same) {
    throw new BringupError(
      "MODEL_WEIGHTS_MISMATCH",
      `${source}: ${name} has shape [${t.shape.join(", ")}] but config.json implies [${shape.join(", ")}].`,
      { subject: name },
    );
  }
}

function share<T extends Float32Array | Uint16Array | Uint8Array>(a: T): T {
  return a.buffer instanceof SharedArrayBuffer ? a : shareArray(a);
}
