"""DeepSeek sparse attention's indexer (port glm-5-mxfp4: GLM-5), in plain PyTorch.

It is bringup's engine's indexer (src/engine/blocks/attention/dsa-indexer.ts, after
deepseek-ai/DeepSeek-V3.2-Exp `inference/model.py` and HF `GlmMoeDsaIndexer`), step for step and
rounding for rounding, so the plugin picks the same keys: vLLM's own indexer
(vllm/model_executor/layers/sparse_attn_indexer.py) has no CPU kernels, and vllm-gaudi runs these
layers as dense MLA.

- A token's indexer key is LayerNorm(wk . h) (statistics in float64, eps 1e-6), its leading
  `qk_rope_head_dim` features rotated at the token's position; the queries are wq_b applied to
  MLA's normalized query latent, rotated the same way. The pairing follows
  `indexer_rope_interleave`: adjacent features (2i, 2i+1) when true, else i with i + rope/2.
  Rotation as the engine's Rope: float32 cos and sin of a float64 angle, products in float64,
  rounded to float32.
- As the reference and vLLM's indexer score (the engine's `dsa_indexer=fp8`, the port's build):
  queries and keys through the orthonormal
  Hadamard transform, then FP8 E4M3 with one scale per 128 values, the scale amax / 448, or that
  rounded up to a power of two when quantization_config.scale_fmt is "ue8m0".
- A query's score for an earlier token s is sum_h w_h ReLU(q_h . k_s) in float64, with
  w = weights_proj(h) / sqrt(heads * head_dim); it attends its top `index_topk` positions up to its
  own (ties to the earlier position), or all of them while they number at most `index_topk`.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn
from vllm.model_executor.layers.linear import MergedColumnParallelLinear, ReplicatedLinear

from bringup_vllm import faults
from bringup_vllm.config_check import Config

# The reference's act_quant block (DeepSeek-V3.2-Exp inference/kernel.py) and E4M3's largest value.
QUANT_BLOCK = 128
E4M3_MAX = 448.0
# E4M3: 3 mantissa bits, smallest normal exponent -6 (bias 7).
E4M3_MANTISSA_BITS = 3
E4M3_MIN_NORMAL_EXPONENT = -6
LAYER_NORM_EPS = 1e-6


def rotate(
    x: torch.Tensor, positions: torch.Tensor, rope: int, theta: float, adjacent: bool
) -> torch.Tensor:
    """The leading `rope` features of x [tokens, heads, d] rotated at `positions`, as the engine's
    Rope: float32 cos/sin tables of float64 angles, products in float64, rounded to float32."""
    half = rope // 2
    inv_freq = 1.0 / theta ** (torch.arange(half, dtype=torch.float64) * 2 / rope)
    angle = positions.to(torch.float64)[:, None] * inv_freq
    cos = angle.cos().float().double()[:, None, :]
    sin = angle.sin().float().double()[:, None, :]
    rotated = x[..., :rope].double()
    if adjacent:
        a, b = rotated[..., 0::2], rotated[..., 1::2]
        turned = torch.stack([a * cos - b * sin, b * cos + a * sin], dim=-1).flatten(-2)
    else:
        a, b = rotated[..., :half], rotated[..., half:]
        turned = torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)
    return torch.cat([turned.float(), x[..., rope:]], dim=-1)


def round_e4m3(y: torch.Tensor) -> torch.Tensor:
    """float64 values rounded to FP8 E4M3's nearest (ties to even), saturating at +-448 (the
    engine's encodeMinifloat with saturate; a direct float64 -> fp8 cast would round twice)."""
    magnitude = y.abs().clamp(max=E4M3_MAX)
    _, exponent = torch.frexp(magnitude)
    # frexp's exponent is one above floor(log2 |y|); zero maps to the subnormal quantum.
    quantum_exponent = (exponent - 1).clamp(min=E4M3_MIN_NORMAL_EXPONENT) - E4M3_MANTISSA_BITS
    quantum = torch.pow(2.0, quantum_exponent.to(torch.float64))
    rounded = (torch.round(magnitude / quantum) * quantum).clamp(max=E4M3_MAX)
    return rounded.copysign(y)


def hadamard_fp8(x: torch.Tensor, scale_fmt: str) -> torch.Tensor:
    """Each row of x [..., d] (d a power of two) through the orthonormal Hadamard transform
    (Sylvester order, float32 butterflies, then times d^-1/2 in float64), then through FP8 E4M3
    with one scale per 128 values: the values the reference's indexer multiplies (float32)."""
    d = x.shape[-1]
    rows = x.reshape(-1, d).float()
    length = 1
    while length < d:
        pairs = rows.reshape(rows.shape[0], d // (2 * length), 2, length)
        a, b = pairs[:, :, 0], pairs[:, :, 1]
        rows = torch.stack([a + b, a - b], dim=2).reshape(rows.shape[0], d)
        length *= 2
    rows = (rows.double() * (1 / math.sqrt(d))).float()
    block = min(QUANT_BLOCK, d)
    blocks = rows.reshape(rows.shape[0], d // block, block).double()
    amax = blocks.abs().amax(dim=-1, keepdim=True)
    scale = amax / E4M3_MAX
    if scale_fmt == "ue8m0":
        scale = torch.pow(2.0, torch.ceil(torch.log2(scale)))
    # A block of zeros stays zero (the engine skips it).
    scale = torch.where(amax == 0, torch.ones_like(scale), scale)
    quantized = (round_e4m3(blocks / scale) * scale).float()
    return quantized.reshape(x.shape)


def index_scores(q: torch.Tensor, weights: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """scores[t, s] = sum_h weights[t, h] ReLU(q[t, h] . keys[s]) in float64 (the engine's
    indexerScores: float32 queries and keys, float64 dots and sums)."""
    dots = torch.einsum("thd,sd->ths", q.double(), keys.double())
    return torch.einsum("th,ths->ts", weights, dots.clamp(min=0))


def selected(scores: torch.Tensor, positions: torch.Tensor, top_k: int) -> torch.Tensor:
    """Which cached positions each query attends, [queries, keys] bool: its top_k scores up to its
    own position (ties to the earlier position), or every one while they number at most top_k."""
    keys = scores.shape[1]
    causal = torch.arange(keys)[None, :] <= positions[:, None]
    ranked = scores.masked_fill(~causal, -math.inf)
    # A stable descending sort keeps equal scores in position order: the earlier one wins.
    order = torch.sort(ranked, dim=1, descending=True, stable=True).indices[:, :top_k]
    chosen = torch.zeros_like(causal).scatter_(1, order, True)
    return causal & (chosen | (positions[:, None] + 1 <= top_k))


class DsaIndexer(nn.Module):
    """One layer's indexer; parameters named as vLLM DeepSeek's (wq_b, wk_weights_proj fusing wk
    and weights_proj, k_norm), so its weight loader fills them from the checkpoint's
    `self_attn.indexer.{wq_b,wk,weights_proj,k_norm}`."""

    def __init__(self, c: Config, hidden: int, q_rank: int, theta: float, prefix: str) -> None:
        super().__init__()
        self.heads = int(c.need("index_n_heads"))
        self.dim = int(c.need("index_head_dim"))
        self.top_k = int(c.need("index_topk"))
        if faults.active("dsa-dense"):
            self.top_k = int(c.need("max_position_embeddings"))
        self.rope = int(c.need("qk_rope_head_dim"))
        self.theta = theta
        # The rope-pairing fault turns this pairing too.
        self.adjacent = bool(c.get("indexer_rope_interleave", False)) != faults.active(
            "rope-pairing"
        )
        quantization = c.get("quantization_config", {})
        self.scale_fmt = "ue8m0" if quantization.get("scale_fmt") == "ue8m0" else "amax"
        self.wq_b = ReplicatedLinear(
            q_rank, self.heads * self.dim, bias=False, prefix=f"{prefix}.wq_b"
        )
        self.wk_weights_proj = MergedColumnParallelLinear(
            hidden,
            [self.dim, self.heads],
            bias=False,
            disable_tp=True,
            prefix=f"{prefix}.wk_weights_proj",
        )
        self.k_norm = nn.LayerNorm(self.dim, eps=LAYER_NORM_EPS)

    def project(
        self, hidden: torch.Tensor, q_latent: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Each token's indexer queries [tokens, heads, d] and key [tokens, d] as the reference
        scores them (Hadamard, FP8), and its head weights [tokens, heads] (float64, scaled)."""
        tokens = hidden.shape[0]
        k, w = self.wk_weights_proj(hidden)[0].split([self.dim, self.heads], dim=-1)
        norm = self.k_norm
        k = F.layer_norm(
            k.double(), (self.dim,), norm.weight.double(), norm.bias.double(), LAYER_NORM_EPS
        ).float()
        k = rotate(k[:, None], positions, self.rope, self.theta, self.adjacent)[:, 0]
        q = self.wq_b(q_latent)[0].view(tokens, self.heads, self.dim)
        q = rotate(q, positions, self.rope, self.theta, self.adjacent)
        q, k = hadamard_fp8(q, self.scale_fmt), hadamard_fp8(k, self.scale_fmt)
        weights = w.double() * (1 / math.sqrt(self.heads * self.dim))
        return q, weights, k
