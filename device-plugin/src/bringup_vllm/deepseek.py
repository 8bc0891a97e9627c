"""The DeepSeek-V3 layout (port kimi-k2.7-code: Kimi K2) on vLLM.

It reads the config fields and tensor names bringup's engine reads
(src/engine/models/deepseek-v3.ts): multi-head latent attention (a low-rank query, a shared
latent of `kv_lora_rank` features plus `qk_rope_head_dim` rotated key features), dense first
layers, and sigmoid-scored experts picked group-limited with a score-correction bias, scaled by
`routed_scaling_factor`, beside shared experts.

The MoE, the dense MLP and the weight loader are vLLM's own (vllm/model_executor/models/
deepseek_v2.py). The attention differs: vLLM's CPU latent-attention backend runs only DeepSeek's
576-feature latent (512 + 64), and the tiny checkpoint's latent is 32 + 8. The plugin computes
latent attention as vLLM's non-latent path does (keys and values decompressed per head through
kv_b_proj, as vLLM's DeepseekV2Attention under VLLM_MLA_DISABLE), on the stock attention backend
with heads zero-padded to a size it runs (padded_heads.py): the same numbers, with a per-head KV
cache instead of the latent one.
"""

from collections.abc import Iterable

import torch
from torch import nn
from vllm.config import VllmConfig
from vllm.model_executor.layers.attention import Attention
from vllm.model_executor.layers.layernorm import RMSNorm
from vllm.model_executor.layers.linear import ColumnParallelLinear, RowParallelLinear
from vllm.model_executor.models.deepseek_v2 import (
    DeepSeekV2FusedQkvAProjLinear,
    DeepseekV2MLP,
    DeepseekV2Model,
    DeepseekV2MoE,
)
from vllm.model_executor.models.utils import (
    AutoWeightsLoader,
    extract_layer_index,
    maybe_prefix,
)
from vllm.transformers_utils.configs import DeepseekV3Config
from vllm.v1.attention.backend import AttentionType

from bringup_vllm.config_check import Config
from bringup_vllm.decoder import DecoderLM, DecoderStack, PreNormLayer
from bringup_vllm.mxfp4 import decoded
from bringup_vllm.padded_heads import pad_heads, served_head_size, unpad_heads
from bringup_vllm.rope import rotary

FAMILY = "DeepSeek-V3"


def read_config(vllm_config: VllmConfig) -> Config:
    """The checkpoint's config, refusing by name what the plugin does not serve (as the engine)."""
    return checked(Config.of(vllm_config, FAMILY))


def checked(c: Config) -> Config:
    # DeepSeek-V3.2's sparse indexer is another family (glm5.py).
    c.require("index_topk", (None,), "a DSA indexer")
    return checked_layout(c)


def checked_layout(c: Config) -> Config:
    """What every config of this layout must say, with or without DSA's indexer."""
    c.require("hidden_act", ("silu",), "the experts and MLPs use SwiGLU")
    # The engine refuses YaRN in this layout (DeepSeek's softmax mscale is not implemented).
    c.require("rope_scaling", (None,), "RoPE scaling")
    c.require("scoring_func", ("sigmoid",), "the layout's sigmoid expert scores")
    c.require("topk_method", ("noaux_tc",), "group-limited routing with a score-correction bias")
    c.require("moe_layer_freq", (None, 1), "experts in every layer after the dense ones")
    # The engine rotates latent attention's adjacent pairs only (deepseek-v3.ts refuses false).
    c.require("rope_interleave", (None, True), "latent attention's adjacent-pair RoPE")
    parameters = c.get("rope_parameters", {})
    if parameters.get("rope_type", parameters.get("type", "default")) != "default":
        c.refuse("rope_parameters", "RoPE scaling")
    nope, rope = int(c.need("qk_nope_head_dim")), int(c.need("qk_rope_head_dim"))
    if c.get("qk_head_dim", nope + rope) != nope + rope:
        c.refuse("qk_head_dim", "a head size other than qk_nope_head_dim + qk_rope_head_dim")
    dense = int(c.get("first_k_dense_replace", 0))
    layers = int(c.need("num_hidden_layers"))
    if c.get("mlp_layer_types", None) not in (
        None,
        ["dense"] * dense + ["sparse"] * (layers - dense),
    ):
        c.refuse("mlp_layer_types", "MoE layers placed other than after first_k_dense_replace")
    c.need("q_lora_rank")
    c.need("kv_lora_rank")
    return c


def rope_theta(c: Config) -> float:
    """The RoPE base as the engine reads it (src/engine/models/config-fields.ts ropeConfig):
    rope_parameters.rope_theta, as public GLM-5.x configs give it, else rope_theta, else 10,000."""
    theta = c.get("rope_parameters", {}).get("rope_theta")
    return float(theta if theta is not None else c.get("rope_theta", 10_000))


class LatentAsHeadsAttention(nn.Module):
    """Latent attention computed per head: keys and values decompressed through kv_b_proj.

    Parameter names are vLLM DeepSeek's (fused_qkv_a_proj, q_a_layernorm, q_b_proj,
    kv_a_layernorm, kv_b_proj, o_proj), so its weight loader fills them from the checkpoint.
    """

    def __init__(self, vllm_config: VllmConfig, c: Config, prefix: str) -> None:
        super().__init__()
        hidden = int(c.need("hidden_size"))
        self.heads = int(c.need("num_attention_heads"))
        self.nope = int(c.need("qk_nope_head_dim"))
        self.rope = int(c.need("qk_rope_head_dim"))
        self.value = int(c.need("v_head_dim"))
        self.q_rank = int(c.need("q_lora_rank"))
        self.kv_rank = int(c.need("kv_lora_rank"))
        self.qk = self.nope + self.rope
        eps = float(c.need("rms_norm_eps"))
        self.theta = rope_theta(c)
        self.fused_qkv_a_proj = DeepSeekV2FusedQkvAProjLinear(
            hidden, [self.q_rank, self.kv_rank + self.rope], prefix=f"{prefix}.fused_qkv_a_proj"
        )
        self.q_a_layernorm = RMSNorm(self.q_rank, eps=eps)
        self.q_b_proj = ColumnParallelLinear(
            self.q_rank, self.heads * self.qk, bias=False, prefix=f"{prefix}.q_b_proj"
        )
        self.kv_a_layernorm = RMSNorm(self.kv_rank, eps=eps)
        self.kv_b_proj = ColumnParallelLinear(
            self.kv_rank,
            self.heads * (self.nope + self.value),
            bias=False,
            prefix=f"{prefix}.kv_b_proj",
        )
        self.o_proj = RowParallelLinear(
            self.heads * self.value, hidden, bias=False, prefix=f"{prefix}.o_proj"
        )
        self.rotary_emb = rotary(
            self.rope,
            int(c.need("max_position_embeddings")),
            self.theta,
            adjacent_pairs=True,
        )
        self.served = served_head_size(self.qk)
        self.attn = Attention(
            self.heads,
            self.served,
            self.qk**-0.5,
            num_kv_heads=self.heads,
            cache_config=vllm_config.cache_config,
            attn_type=AttentionType.DECODER,
            prefix=f"{prefix}.attn",
        )

    def forward(self, positions: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        q, k, value, _ = self.project(positions, hidden)
        tokens, h = hidden.shape[0], self.heads
        out = self.attn(
            pad_heads(q.reshape(tokens, -1), h, self.qk, self.served),
            pad_heads(k.reshape(tokens, -1), h, self.qk, self.served),
            pad_heads(value.reshape(tokens, -1), h, self.value, self.served),
        )
        result, _ = self.o_proj(unpad_heads(out, h, self.value, self.served))
        return result

    def project(
        self, positions: torch.Tensor, hidden: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per-head queries and keys [tokens, heads, qk] and values [tokens, heads, v], and the
        normalized query latent [tokens, q_lora_rank] (which DSA's indexer reads too)."""
        tokens, h = hidden.shape[0], self.heads
        q_a, kv_a = self.fused_qkv_a_proj(hidden)[0].split(
            [self.q_rank, self.kv_rank + self.rope], dim=-1
        )
        q_latent = self.q_a_layernorm(q_a)
        q = self.q_b_proj(q_latent)[0].view(tokens, h, self.qk)
        q_nope, q_pe = q.split([self.nope, self.rope], dim=-1)
        latent, k_pe = kv_a.split([self.kv_rank, self.rope], dim=-1)
        kv = self.kv_b_proj(self.kv_a_layernorm(latent))[0].view(tokens, h, -1)
        k_nope, value = kv.split([self.nope, self.value], dim=-1)
        # Rotary as [tokens, heads * features]: vLLM 0.32's CPU rotary kernel misreads
        # [tokens, heads, features] inputs (4.8 off on a unit-normal input, where the native
        # form is exact), which is how vLLM's own DeepseekV2Attention passes them.
        q_pe, k_pe = self.rotary_emb(
            positions, q_pe.reshape(tokens, h * self.rope), k_pe.contiguous()
        )
        q_pe = q_pe.view(tokens, h, self.rope)
        q = torch.cat([q_nope, q_pe], dim=-1)
        k_pe = k_pe.view(tokens, 1, self.rope).expand(tokens, h, self.rope)
        k = torch.cat([k_nope, k_pe], dim=-1)
        return q, k, value, q_latent


class DeepseekDecoderLayer(PreNormLayer):
    """Latent attention (`attention`, over the config `read_config` checks), then the MoE or MLP."""

    read_config = staticmethod(read_config)
    attention: type[LatentAsHeadsAttention] = LatentAsHeadsAttention

    def __init__(self, vllm_config: VllmConfig, prefix: str) -> None:
        super().__init__()
        c = self.read_config(vllm_config)
        # vLLM reads kimi_k2 and deepseek_v3 config.json files as its DeepseekV3Config (and
        # glm_moe_dsa ones as transformers' GlmMoeDsaConfig, with the same MoE fields).
        config: DeepseekV3Config = vllm_config.model_config.hf_config
        hidden = int(c.need("hidden_size"))
        self.self_attn = self.attention(vllm_config, c, prefix=f"{prefix}.self_attn")
        if extract_layer_index(prefix) >= int(c.get("first_k_dense_replace", 0)):
            self.mlp: nn.Module = DeepseekV2MoE(
                config=config,
                parallel_config=vllm_config.parallel_config,
                prefix=f"{prefix}.mlp",
                apply_routed_scale_to_output=True,
            )
        else:
            self.mlp = DeepseekV2MLP(
                hidden, int(c.need("intermediate_size")), "silu", prefix=f"{prefix}.mlp"
            )
        self.add_norms(hidden, float(c.need("rms_norm_eps")))


class DeepseekModel(DecoderStack):
    """The layer stack; loads weights with vLLM DeepSeek's own loader."""

    # vLLM's DeepSeek weight loading (q_a/kv_a and gate/up stacking, experts, the correction
    # bias, skipping the multi-token-prediction layers) works on these parameter names and on the
    # attributes set below.
    load_weights = DeepseekV2Model.load_weights
    use_mha = False
    is_fused_shared_expert_enabled = False
    num_redundant_experts = 0

    layer: type[DeepseekDecoderLayer] = DeepseekDecoderLayer

    def __init__(self, vllm_config: VllmConfig, c: Config, prefix: str) -> None:
        super().__init__(vllm_config, c, self.layer, float(c.need("rms_norm_eps")), prefix)
        self.config = vllm_config.model_config.hf_config


class DeepseekForCausalLM(DecoderLM):
    stack: type[DeepseekModel] = DeepseekModel

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        c = self.stack.layer.read_config(vllm_config)
        super().__init__(c, self.stack(vllm_config, c, maybe_prefix(prefix, "model")), prefix)

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]:
        # The routed experts may come in MXFP4; they are decoded as they are read.
        loader = AutoWeightsLoader(
            self, ignore_unexpected_prefixes=["lm_head."] if self.tied else None
        )
        return loader.load_weights(decoded(weights))
