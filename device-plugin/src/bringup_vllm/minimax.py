"""The MiniMax-M3 family (port minimax-m3) on vLLM.

It reads the config fields and tensor names bringup's engine reads
(src/engine/models/minimax-m3.ts): gpt-oss's layer mix (`layer_types` alternating a sliding
window with sinks and full attention), grouped-query attention with q/k/v biases, and gpt-oss's
mixture of experts: a router with a bias, top-k then a softmax over the chosen k, and experts with
the clamped SwiGLU whose gate and linear halves are interleaved, stored in MXFP4 under gpt-oss's
names (`mlp.experts.gate_up_proj_{blocks,scales,bias}`, `mlp.experts.down_proj_{...}`).

Composed from vLLM's fused MoE (activation "swigluoai", as vLLM's gpt_oss.py builds it), RMSNorm,
linear and embedding layers, and the plugin's padded-head attention (attention.py), which carries
sinks on the sliding layers only, as the port's model does (vLLM's gpt-oss puts them on every
layer). The experts are decoded from MXFP4 to float32 as they are read (mxfp4.py).
"""

from collections.abc import Iterable
from typing import ClassVar

import torch
from torch import nn
from vllm.config import VllmConfig
from vllm.distributed import (
    get_tensor_model_parallel_rank,
    get_tensor_model_parallel_world_size,
)
from vllm.model_executor.layers.fused_moe import FusedMoEFactory
from vllm.model_executor.layers.linear import ReplicatedLinear
from vllm.model_executor.models.utils import extract_layer_index

from bringup_vllm.attention import PaddedValueAttention, qkv_shard, rotary_fraction
from bringup_vllm.config_check import Config, UnsupportedConfigError
from bringup_vllm.decoder import DecoderLM, PreNormLayer, windowed_stack

FAMILY = "MiniMax-M3"
# gpt-oss's slope of the clamped SwiGLU's sigmoid; the config does not carry it.
SWIGLU_ALPHA = 1.702


def read_config(vllm_config: VllmConfig) -> Config:
    """The checkpoint's config, refusing by name what the plugin does not serve (as the engine)."""
    return checked(Config.of(vllm_config, FAMILY))


def checked(c: Config) -> Config:
    c.require("model_type", ("minimax_m3",), "the family's model_type")
    c.require("rope_scaling", (None,), "RoPE scaling")
    c.require("rope_parameters", (None,), "RoPE parameter tables; give rope_theta")
    # MiniMax-M2's q/k norm over the whole projection is not in this port's model (as the engine).
    c.require("use_qk_norm", (None, False), "a q/k norm over the whole projection")
    kinds = c.need("layer_types")
    if len(kinds) != int(c.need("num_hidden_layers")):
        c.refuse("layer_types", "give one entry per layer")
    if any(kind not in ("sliding_attention", "full_attention") for kind in kinds):
        c.refuse("layer_types", "each entry is sliding_attention or full_attention")
    if "sliding_attention" in kinds:
        c.need("sliding_window")
    if int(c.need("num_experts_per_tok")) > int(c.need("num_local_experts")):
        c.refuse("num_experts_per_tok", "more experts per token than experts")
    return c


class ClampedSwigluMoe(nn.Module):
    """gpt-oss's experts: a biased router, top-k then softmax, biased clamped-SwiGLU experts.

    vLLM's fused MoE with renormalize=True takes a softmax over all experts, keeps the top k and
    divides by their sum, which equals a softmax over the chosen k's logits.
    """

    def __init__(self, c: Config, prefix: str) -> None:
        super().__init__()
        hidden = int(c.need("hidden_size"))
        experts = int(c.need("num_local_experts"))
        self.router = ReplicatedLinear(hidden, experts, bias=True, prefix=f"{prefix}.router")
        self.experts = FusedMoEFactory(
            num_experts=experts,
            top_k=int(c.need("num_experts_per_tok")),
            hidden_size=hidden,
            intermediate_size=int(c.need("intermediate_size")),
            renormalize=True,
            has_bias=True,
            activation="swigluoai",
            swiglu_limit=float(c.get("swiglu_limit", 7.0)),
            swiglu_alpha=SWIGLU_ALPHA,
            prefix=f"{prefix}.experts",
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits, _ = self.router(x)
        out: torch.Tensor = self.experts(hidden_states=x, router_logits=logits)
        return out


class MinimaxDecoderLayer(PreNormLayer):
    def __init__(self, vllm_config: VllmConfig, prefix: str) -> None:
        super().__init__()
        c = read_config(vllm_config)
        sliding = c.values["layer_types"][extract_layer_index(prefix)] == "sliding_attention"
        hidden = int(c.need("hidden_size"))
        head_dim = int(c.need("head_dim"))
        self.self_attn = PaddedValueAttention(
            vllm_config,
            family=FAMILY,
            hidden_size=hidden,
            bias=bool(c.get("attention_bias", True)),
            num_heads=int(c.need("num_attention_heads")),
            num_kv_heads=int(c.need("num_key_value_heads")),
            head_dim=head_dim,
            v_head_dim=head_dim,
            window=int(c.need("sliding_window")) if sliding else None,
            sinks=sliding,
            rope_theta=float(c.get("rope_theta", 150_000)),
            partial_factor=rotary_fraction(FAMILY, head_dim, c.get("partial_rotary_factor", 1.0)),
            max_position=int(c.get("max_position_embeddings", 131_072)),
            prefix=f"{prefix}.self_attn",
        )
        self.mlp = ClampedSwigluMoe(c, prefix=f"{prefix}.mlp")
        self.add_norms(hidden, float(c.get("rms_norm_eps", 1e-5)))


class MinimaxForCausalLM(DecoderLM):
    packed_modules_mapping: ClassVar[dict[str, list[str]]] = {
        "qkv_proj": ["q_proj", "k_proj", "v_proj"],
    }

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        c = read_config(vllm_config)
        eps = float(c.get("rms_norm_eps", 1e-5))
        super().__init__(
            c, windowed_stack(vllm_config, c, MinimaxDecoderLayer, eps, prefix), prefix
        )

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]:
        def place(
            target: str, param: nn.Parameter, tensor: torch.Tensor, _: str | int | None
        ) -> bool:
            if target.endswith(("experts.w13_weight", "experts.w13_bias")):
                param.data.copy_(tensor_parallel_rows(tensor, interleaved=True))
            elif target.endswith("experts.w2_weight"):
                param.data.copy_(tensor_parallel_columns(tensor))
            elif target.endswith("experts.w2_bias"):
                # vLLM adds the down projection's bias once, after the ranks' partial sums.
                param.data.copy_(tensor)
            else:
                return False
            return True

        return self.load_mapped(weights, checkpoint_to_parameter, place)


# vLLM's fused MoE keeps its expert parameters under `routed_experts` (its MoE runner's module).
_EXPERTS = {
    "gate_up_proj": "w13_weight",
    "gate_up_proj_bias": "w13_bias",
    "down_proj": "w2_weight",
    "down_proj_bias": "w2_bias",
}


def checkpoint_to_parameter(name: str) -> tuple[str, str | None]:
    """A checkpoint tensor's parameter name here, and its shard of a fused projection."""
    qkv = qkv_shard(name)
    if qkv is not None:
        return qkv
    parts = name.split(".")
    if parts[-1] == "sinks":
        return ".".join([*parts[:-1], "attention_sink_bias"]), None
    if len(parts) >= 2 and parts[-2] == "experts" and parts[-1] in _EXPERTS:
        return ".".join([*parts[:-1], "routed_experts", _EXPERTS[parts[-1]]]), None
    return name, None


def tensor_parallel_rows(t: torch.Tensor, *, interleaved: bool) -> torch.Tensor:
    """This rank's share of [E, 2I, ...]: interleaved gate/up rows keep their pairs together."""
    rank, ranks = get_tensor_model_parallel_rank(), get_tensor_model_parallel_world_size()
    share = t.shape[1] // ranks
    if interleaved and share % 2:
        raise UnsupportedConfigError(
            f"{FAMILY}: intermediate_size does not split over {ranks} ranks"
        )
    return t[:, rank * share : (rank + 1) * share]


def tensor_parallel_columns(t: torch.Tensor) -> torch.Tensor:
    """This rank's share of the down projection [E, H, I]: its columns of I."""
    rank, ranks = get_tensor_model_parallel_rank(), get_tensor_model_parallel_world_size()
    share = t.shape[2] // ranks
    return t[:, :, rank * share : (rank + 1) * share]
