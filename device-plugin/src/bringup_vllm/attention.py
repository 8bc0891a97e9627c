"""Grouped-query attention on the platform's stock backend, heads padded to a size it runs.

Shared by the families whose layers are sliding or global grouped-query attention with optional
sinks, partial rotary features and Qwen3's per-head q/k norm (MiMo-V2-Flash, MiniMax-M3, Muse
Glimmer). vLLM's own MiMo attention picks a "DiffKV" backend (FlashAttention or Triton) when
value heads are narrower than key heads, and neither exists on the CPU backend or on vllm-gaudi
(no Triton); this one pads each head with zeros to one size the stock backend runs and drops the
padded features of the output: the same numbers, since a zero feature of V contributes zero to
every output feature it is not.
"""

import torch
from torch import nn
from vllm.config import VllmConfig
from vllm.model_executor.layers.attention import Attention
from vllm.model_executor.layers.layernorm import RMSNorm
from vllm.model_executor.layers.linear import QKVParallelLinear, RowParallelLinear
from vllm.v1.attention.backend import AttentionType

from bringup_vllm.config_check import UnsupportedConfigError
from bringup_vllm.padded_heads import pad_heads, served_head_size, unpad_heads
from bringup_vllm.rope import rotary

_QKV = {"q_proj": "q", "k_proj": "k", "v_proj": "v"}


def qkv_shard(name: str) -> tuple[str, str] | None:
    """A checkpoint's `...q_proj.weight` as PaddedValueAttention's `...qkv_proj.weight`, shard q."""
    parts = name.split(".")
    if len(parts) >= 2 and parts[-2] in _QKV:
        return ".".join([*parts[:-2], "qkv_proj", parts[-1]]), _QKV[parts[-2]]
    return None


def rotary_fraction(family: str, head_dim: int, factor: float) -> float:
    """partial_rotary_factor as the engine and transformers count it: floor(head_dim * factor)."""
    rotated = int(head_dim * factor + 1e-9)
    if rotated < 2 or rotated % 2:
        raise UnsupportedConfigError(
            f"{family}: partial_rotary_factor={factor} of a {head_dim}-feature head rotates "
            f"{rotated} features, which must be even and at least 2."
        )
    return rotated / head_dim


class PaddedValueAttention(nn.Module):
    """Grouped-query attention, value heads as wide as or narrower than query/key heads.

    Parameter names are vLLM MiMo's (qkv_proj, o_proj, attention_sink_bias), so its weight
    loader fills them from the checkpoint's q_proj/k_proj/v_proj and attention_sink_bias.
    """

    def __init__(
        self,
        vllm_config: VllmConfig,
        *,
        family: str,
        hidden_size: int,
        bias: bool,
        num_heads: int,
        num_kv_heads: int,
        head_dim: int,
        v_head_dim: int,
        window: int | None,
        sinks: bool,
        rope_theta: float,
        partial_factor: float,
        max_position: int,
        prefix: str,
        qk_norm_eps: float | None = None,
    ) -> None:
        super().__init__()
        if num_heads % num_kv_heads:
            raise UnsupportedConfigError(
                f"{family}: {num_heads} query heads are not a multiple of {num_kv_heads} "
                "key/value heads."
            )
        if v_head_dim > head_dim:
            raise UnsupportedConfigError(
                f"{family}: v_head_dim {v_head_dim} wider than head_dim {head_dim} is not served."
            )
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = head_dim
        self.v_head_dim = v_head_dim
        self.q_size = num_heads * head_dim
        self.k_size = num_kv_heads * head_dim
        self.v_size = num_kv_heads * v_head_dim
        self.qkv_proj = QKVParallelLinear(
            hidden_size,
            head_dim,
            num_heads,
            num_kv_heads,
            bias=bias,
            prefix=f"{prefix}.qkv_proj",
            v_head_size=v_head_dim,
        )
        self.o_proj = RowParallelLinear(
            num_heads * v_head_dim, hidden_size, bias=False, prefix=f"{prefix}.o_proj"
        )
        self.rotary_emb = rotary(head_dim, max_position, rope_theta, partial_factor)
        # Qwen3's q/k norm: an RMSNorm over each head's features, before the rotation.
        self.q_norm: RMSNorm | None = None
        self.k_norm: RMSNorm | None = None
        if qk_norm_eps is not None:
            self.q_norm = RMSNorm(head_dim, eps=qk_norm_eps)
            self.k_norm = RMSNorm(head_dim, eps=qk_norm_eps)
        self.attention_sink_bias = (
            nn.Parameter(torch.empty(num_heads), requires_grad=False) if sinks else None
        )
        self.served = served_head_size(head_dim)
        self.attn = Attention(
            num_heads,
            self.served,
            head_dim**-0.5,
            num_kv_heads=num_kv_heads,
            cache_config=vllm_config.cache_config,
            per_layer_sliding_window=window,
            attn_type=AttentionType.DECODER,
            prefix=f"{prefix}.attn",
            sinks=self.attention_sink_bias,
        )

    def forward(self, positions: torch.Tensor, hidden_states: torch.Tensor) -> torch.Tensor:
        qkv, _ = self.qkv_proj(hidden_states)
        q, k, v = qkv.split([self.q_size, self.k_size, self.v_size], dim=-1)
        h, kv, d, served = self.num_heads, self.num_kv_heads, self.head_dim, self.served
        if self.q_norm is not None and self.k_norm is not None:
            q = self.q_norm(q.reshape(-1, h, d)).reshape(q.shape)
            k = self.k_norm(k.reshape(-1, kv, d)).reshape(k.shape)
        q, k = self.rotary_emb(positions, q, k)
        out = self.attn(
            pad_heads(q, h, d, served),
            pad_heads(k, kv, d, served),
            pad_heads(v, kv, self.v_head_dim, served),
        )
        out = unpad_heads(out, h, self.v_head_dim, served)
        result, _ = self.o_proj(out)
        return result
