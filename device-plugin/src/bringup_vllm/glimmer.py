"""The Muse Glimmer family (port muse-glimmer-30b) on vLLM: vLLM's Qwen3-MoE with three patches.

bringup's engine runs Glimmer as the llama family's qwen3_moe reading plus three patches
(src/engine/models/muse-glimmer.ts); the plugin puts the same three on vLLM's Qwen3-MoE
(vllm/model_executor/models/qwen3_moe.py), whose sparse MoE block, dense MLP and weight loader it
uses as they are:

1. expert-fields: config.json names the experts `moe_num_experts` and `moe_top_k`; vLLM's
   Qwen3-MoE block reads `num_experts` and `num_experts_per_tok` from the config object, so the
   family's config class sets them there (configs.py). The same field spelled both ways is
   refused, as the engine does.
2. router-name: each layer's router is stored as `mlp.router.weight` where Qwen3-MoE has
   `mlp.gate.weight`; the loader renames it (`checkpoint_name`).
3. sliding-pattern: `sliding_window_pattern: N` makes every Nth layer full and the others slide
   over `sliding_window` tokens (`layer_windows`). vLLM's Qwen3-MoE attention has no per-layer
   window, so the attention is the plugin's (attention.py), with Qwen3's per-head q/k norm; it
   also pads the heads to a size the CPU backend runs.

No public source describes Glimmer's checkpoint: the model type, class, fields and tensor names
are the port's own (as the engine's).
"""

from collections.abc import Iterable
from typing import ClassVar

import torch
from torch import nn
from vllm.config import VllmConfig
from vllm.model_executor.models.qwen3_moe import (
    Qwen3MoeMLP,
    Qwen3MoeModel,
    Qwen3MoeSparseMoeBlock,
)
from vllm.model_executor.models.utils import AutoWeightsLoader, extract_layer_index

from bringup_vllm.attention import PaddedValueAttention, rotary_fraction
from bringup_vllm.config_check import Config
from bringup_vllm.configs import GLIMMER_EXPERT_FIELDS
from bringup_vllm.decoder import DecoderLM, DecoderStack, PreNormLayer, windowed_stack

FAMILY = "Muse Glimmer"
# The llama family's defaults where config.json is silent (src/engine/models/llama.ts).
DEFAULT_EPS = 1e-6
DEFAULT_THETA = 10_000.0
DEFAULT_MAX_POSITION = 4096


def read_config(vllm_config: VllmConfig) -> Config:
    """The checkpoint's config, refusing by name what the plugin does not serve (as the engine)."""
    return checked(Config.of(vllm_config, FAMILY))


def checked(c: Config) -> Config:
    c.require("model_type", ("muse_glimmer",), "the family's model_type")
    c.require("hidden_act", ("silu", None), "Qwen3-MoE's MLPs and experts use SwiGLU")
    c.require("rope_scaling", (None,), "RoPE scaling")
    c.require("rope_parameters", (None,), "RoPE parameter tables; give rope_theta")
    # vLLM's Qwen3-MoE block routes by a softmax and does not scale the routed sum.
    c.require("scoring_func", (None, "softmax"), "Qwen3-MoE routes by a softmax")
    c.require("routed_scaling_factor", (None, 1, 1.0), "a routed scaling factor")
    c.require("use_sliding_window", (None, False), "give sliding_window_pattern")
    c.require("layer_types", (None,), "a Muse Glimmer config says sliding_window_pattern")
    for glimmer, qwen in GLIMMER_EXPERT_FIELDS.items():
        if c.values.get(qwen) is not None:
            c.refuse(qwen, f"Muse Glimmer names it {glimmer}; keep {glimmer} only")
    experts, top_k = int(c.need("moe_num_experts")), int(c.need("moe_top_k"))
    if top_k > experts:
        c.refuse("moe_top_k", f"more experts per token than the {experts} experts")
    c.need("moe_intermediate_size")
    if int(c.need("num_attention_heads")) % int(c.get("num_key_value_heads", 1)):
        c.refuse("num_key_value_heads", "the query heads must be a multiple of it")
    layer_windows(c)
    return c


def layer_windows(c: Config) -> list[int | None]:
    """Patch 3: each layer's sliding window, None for a full layer (every Nth layer is full)."""
    layers = int(c.need("num_hidden_layers"))
    pattern = c.values.get("sliding_window_pattern")
    if pattern is None:
        return [None] * layers
    if not isinstance(pattern, int) or isinstance(pattern, bool) or pattern < 1:
        c.refuse("sliding_window_pattern", "every Nth layer full needs a positive integer N")
    window = int(c.need("sliding_window"))
    return [None if (i + 1) % pattern == 0 else window for i in range(layers)]


def is_moe_layer(c: Config, layer: int) -> bool:
    """Qwen3-MoE's rule: routed experts unless listed in mlp_only_layers or off the sparse step."""
    step = int(c.get("decoder_sparse_step", 1))
    return layer not in c.get("mlp_only_layers", []) and (layer + 1) % step == 0


def checkpoint_name(name: str) -> str:
    """Patch 2: a Glimmer tensor name as Qwen3-MoE spells it (the router is its `gate`)."""
    parts = name.split(".")
    if parts[-3:] == ["mlp", "router", "weight"]:
        return ".".join([*parts[:-2], "gate", "weight"])
    return name


class GlimmerDecoderLayer(PreNormLayer):
    def __init__(self, vllm_config: VllmConfig, prefix: str) -> None:
        super().__init__()
        c = read_config(vllm_config)
        layer = extract_layer_index(prefix)
        hidden = int(c.need("hidden_size"))
        heads = int(c.need("num_attention_heads"))
        head_dim = int(c.get("head_dim", hidden // heads))
        eps = float(c.get("rms_norm_eps", DEFAULT_EPS))
        self.self_attn = PaddedValueAttention(
            vllm_config,
            family=FAMILY,
            hidden_size=hidden,
            bias=bool(c.get("attention_bias", False)),
            num_heads=heads,
            num_kv_heads=int(c.get("num_key_value_heads", heads)),
            head_dim=head_dim,
            v_head_dim=int(c.get("v_head_dim", head_dim)),
            window=layer_windows(c)[layer],
            sinks=False,
            rope_theta=float(c.get("rope_theta", DEFAULT_THETA)),
            partial_factor=rotary_fraction(FAMILY, head_dim, c.get("partial_rotary_factor", 1.0)),
            max_position=int(c.get("max_position_embeddings", DEFAULT_MAX_POSITION)),
            prefix=f"{prefix}.self_attn",
            qk_norm_eps=eps,
        )
        if is_moe_layer(c, layer):
            self.mlp: nn.Module = Qwen3MoeSparseMoeBlock(vllm_config, prefix=f"{prefix}.mlp")
        else:
            self.mlp = Qwen3MoeMLP(
                hidden, int(c.need("intermediate_size")), "silu", prefix=f"{prefix}.mlp"
            )
        self.add_norms(hidden, eps)


class GlimmerStack(DecoderStack):
    """The layer stack, loading weights with vLLM Qwen3-MoE's loader (q/k/v stacking, experts)."""

    hf_to_vllm_mapper = Qwen3MoeModel.hf_to_vllm_mapper
    load_weights = Qwen3MoeModel.load_weights


class GlimmerForCausalLM(DecoderLM):
    packed_modules_mapping: ClassVar[dict[str, list[str]]] = {
        "qkv_proj": ["q_proj", "k_proj", "v_proj"],
        "gate_up_proj": ["gate_proj", "up_proj"],
    }

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        c = read_config(vllm_config)
        eps = float(c.get("rms_norm_eps", DEFAULT_EPS))
        model = windowed_stack(vllm_config, c, GlimmerDecoderLayer, eps, prefix, GlimmerStack)
        super().__init__(c, model, prefix)

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]:
        skip = ["lm_head."] if self.tied else []
        loader = AutoWeightsLoader(self, ignore_unexpected_prefixes=skip)
        return loader.load_weights((checkpoint_name(n), t) for n, t in weights)
