"""The Inkling family (port inkling-small): plain-PyTorch blocks, checked block by block.

It reads the config fields and tensor names bringup's engine reads (src/engine/models/
inkling.ts): attention with no rotary embedding, positions entering only through a learned logit
per head and relative-distance bucket (T5's `relative_attention_bias`, causal buckets), short
causal depthwise convolutions over the keys and values (`k_sconv`, `v_sconv`, no activation)
whose last kernel - 1 inputs are kept per sequence, and sigmoid-routed SwiGLU experts in every
layer (the top-k renormalized, times `route_scale`).

vLLM does not serve it: its attention backends (the CPU one and vllm-gaudi's) take no learned
per-bucket logit (only ALiBi slopes), and the convolution tails are per-sequence state that would
need vLLM's Mamba-style state cache. So the blocks here are plain PyTorch with static shapes,
held to the engine layer output by layer output on the tiny checkpoint
(tests/test_inkling_blocks.py); no vLLM model class is registered for `InklingForCausalLM`.
"""

import math
from collections.abc import Callable

import torch
from torch.nn import functional as F

from bringup_vllm.config_check import Config

FAMILY = "Inkling"
DEFAULT_EPS = 1e-6
DEFAULT_MAX_POSITION = 262_144


def checked(c: Config) -> Config:
    """config.json as the engine reads it, refusing by name what this family does not compute."""
    c.require("model_type", ("inkling",), "the family's model_type")
    c.require("n_shared_experts", (None, 0), "the port's model has no shared experts")
    c.require("rope_theta", (None,), "this family has no rotary embedding")
    c.require("rope_scaling", (None,), "this family has no rotary embedding")
    heads, kv_heads = int(c.need("num_attention_heads")), int(c.need("num_key_value_heads"))
    if heads % kv_heads:
        c.refuse("num_attention_heads", f"not a multiple of {kv_heads} key/value heads")
    buckets = int(c.need("relative_attention_num_buckets"))
    distance = int(c.need("relative_attention_max_distance"))
    if buckets < 2 or distance <= buckets // 2:
        c.refuse("relative_attention_max_distance", "it must exceed half the buckets")
    if distance > int(c.get("max_position_embeddings", DEFAULT_MAX_POSITION)):
        c.refuse("relative_attention_max_distance", "no two positions are that far apart")
    if int(c.need("num_experts_per_tok")) > int(c.need("n_routed_experts")):
        c.refuse("num_experts_per_tok", "more experts per token than experts")
    for name in ("hidden_size", "head_dim", "sconv_kernel_size", "moe_intermediate_size"):
        c.need(name)
    return c


def relative_buckets(distance: torch.Tensor, num_buckets: int, max_distance: int) -> torch.Tensor:
    """T5's causal relative-position bucket of each distance >= 0 (HF modeling_t5.py
    `_relative_position_bucket`, bidirectional=False), computed in float32 as it is there."""
    exact = num_buckets // 2
    ratio = distance.float().clamp(min=1) / exact
    large = exact + (torch.log(ratio) / math.log(max_distance / exact) * (num_buckets - exact)).to(
        torch.long
    )
    large = large.clamp(max=num_buckets - 1)
    return torch.where(distance < exact, distance, large)


def causal_conv(
    x: torch.Tensor, weight: torch.Tensor, tail: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Causal depthwise convolution, no activation: x [T, C], weight [C, 1, K], tail [C, K-1]
    (the sequence's previous inputs, oldest first; zeros at its start). Returns y [T, C] and the
    tail the next step reads."""
    stream = torch.cat([tail, x.t()], dim=1)  # [C, K-1+T]
    y = F.conv1d(stream.unsqueeze(0), weight, groups=weight.shape[0])[0].t()
    return y, stream[:, stream.shape[1] - tail.shape[1] :]


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.square().mean(-1, keepdim=True) + eps) * weight


class InklingReference:
    """The Inkling stack as plain-PyTorch blocks over a checkpoint's tensors (float32)."""

    def __init__(self, c: Config, weights: dict[str, torch.Tensor]) -> None:
        self.c = checked(c)
        self.w = weights
        self.eps = float(c.get("rms_norm_eps", DEFAULT_EPS))
        self.heads, self.kv_heads = (
            int(c.need("num_attention_heads")),
            int(c.need("num_key_value_heads")),
        )
        self.head_dim = int(c.need("head_dim"))
        self.buckets = int(c.need("relative_attention_num_buckets"))
        self.max_distance = int(c.need("relative_attention_max_distance"))
        self.top_k = int(c.need("num_experts_per_tok"))
        self.experts = int(c.need("n_routed_experts"))
        self.route_scale = float(c.get("route_scale", 1.0))
        self.num_layers = int(c.need("num_hidden_layers"))

    @classmethod
    def from_checkpoint(
        cls, config: dict[str, object], weights: dict[str, torch.Tensor]
    ) -> "InklingReference":
        return cls(Config(config, FAMILY), weights)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.w["model.embed_tokens.weight"][ids]

    def head(self, stream: torch.Tensor) -> torch.Tensor:
        lm_head = (
            "model.embed_tokens.weight" if self.c.get("tie_word_embeddings") else "lm_head.weight"
        )
        return rms_norm(stream, self.w["model.norm.weight"], self.eps) @ self.w[lm_head].t()

    def attention(
        self, layer: int, x: torch.Tensor, tails: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """One sequence's attention over x [T, hidden], the first row at position len(prefix) = 0
        when `tails` is None (a prefill from the start; the engine's keys and values of earlier
        steps are not kept here). Returns the output and the convolution tails."""
        p = f"model.layers.{layer}.self_attn"
        w = self.w
        T, d, h, kv = x.shape[0], self.head_dim, self.heads, self.kv_heads
        channels, kernel = kv * d, w[f"{p}.k_sconv.weight"].shape[-1]
        if tails is None:
            zero = torch.zeros(channels, kernel - 1, dtype=x.dtype)
            tails = (zero, zero)
        q = (x @ w[f"{p}.q_proj.weight"].t()).view(T, h, d)
        k, k_tail = causal_conv(x @ w[f"{p}.k_proj.weight"].t(), w[f"{p}.k_sconv.weight"], tails[0])
        v, v_tail = causal_conv(x @ w[f"{p}.v_proj.weight"].t(), w[f"{p}.v_sconv.weight"], tails[1])
        k = k.view(T, kv, d).repeat_interleave(h // kv, dim=1)
        v = v.view(T, kv, d).repeat_interleave(h // kv, dim=1)
        positions = torch.arange(T)
        distance = positions[:, None] - positions[None, :]  # query - key
        bucket = relative_buckets(distance.clamp(min=0), self.buckets, self.max_distance)
        bias = w[f"{p}.relative_attention_bias.weight"][bucket].permute(2, 0, 1)  # [h, T, T]
        logits = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(d) + bias
        logits = logits.masked_fill(distance < 0, float("-inf"))
        out = torch.einsum("hqk,khd->qhd", torch.softmax(logits, dim=-1), v).reshape(T, h * d)
        return out @ w[f"{p}.o_proj.weight"].t(), (k_tail, v_tail)

    def moe(self, layer: int, x: torch.Tensor) -> torch.Tensor:
        """Sigmoid scores, top-k renormalized and scaled; every expert on every row (static
        shapes), weighted by zero for the experts a row did not choose."""
        p = f"model.layers.{layer}.mlp"
        w = self.w
        scores = torch.sigmoid(x @ w[f"{p}.gate.weight"].t())
        top, chosen = torch.topk(scores, self.top_k, dim=-1)
        mix = torch.zeros_like(scores).scatter(
            1, chosen, top / top.sum(-1, keepdim=True) * self.route_scale
        )
        out = torch.zeros_like(x)
        for e in range(self.experts):
            q = f"{p}.experts.{e}"
            inner = F.silu(x @ w[f"{q}.gate_proj.weight"].t()) * (x @ w[f"{q}.up_proj.weight"].t())
            out += mix[:, e : e + 1] * (inner @ w[f"{q}.down_proj.weight"].t())
        return out

    def mixer_block(self, layer: int) -> Callable[[torch.Tensor], torch.Tensor]:
        """The residual stream before layer `layer` -> after its attention (a prefill)."""

        def block(stream: torch.Tensor) -> torch.Tensor:
            normed = rms_norm(
                stream, self.w[f"model.layers.{layer}.input_layernorm.weight"], self.eps
            )
            return stream + self.attention(layer, normed)[0]

        return block

    def ffn_block(self, layer: int) -> Callable[[torch.Tensor], torch.Tensor]:
        """The residual stream after layer `layer`'s attention -> after its experts."""

        def block(stream: torch.Tensor) -> torch.Tensor:
            norm = self.w[f"model.layers.{layer}.post_attention_layernorm.weight"]
            return stream + self.moe(layer, rms_norm(stream, norm, self.eps))

        return block
