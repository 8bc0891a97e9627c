"""The MiMo-V2-Flash family (ports mimo-v2.6-flash and mimo-v2.6-pro) on vLLM.

It reads the config fields and tensor names bringup's engine reads (src/engine/models/mimo.ts):
sliding and global grouped-query attention with query/key heads wider than value heads, sink
logits on the sliding layers, partial rotary features, a dense first layer and sigmoid-routed
grouped experts with a score-correction bias.

Composed from vLLM's own MiMo layers (vllm/model_executor/models/mimo_v2.py: the MoE, the MLP,
the weight loader) and vLLM's RMSNorm, rotary and linear layers; the attention is the plugin's
padded-head attention (attention.py), since vLLM's MiMo attention needs a backend that neither
the CPU nor vllm-gaudi has.
"""

from collections.abc import Iterable
from typing import ClassVar

import torch
from torch import nn
from vllm.config import VllmConfig
from vllm.model_executor.layers.layernorm import RMSNorm
from vllm.model_executor.layers.logits_processor import LogitsProcessor
from vllm.model_executor.layers.vocab_parallel_embedding import (
    ParallelLMHead,
    VocabParallelEmbedding,
)
from vllm.model_executor.models.mimo_v2 import MiMoV2MLP, MiMoV2Model, MiMoV2MoE
from vllm.model_executor.models.utils import (
    AutoWeightsLoader,
    extract_layer_index,
    make_layers,
    maybe_prefix,
)

from bringup_vllm.attention import PaddedValueAttention, rotary_fraction
from bringup_vllm.config_check import Config
from bringup_vllm.decoder import PreNormLayer
from bringup_vllm.mxfp4 import decoded

FAMILY = "MiMo-V2-Flash"


def read_config(vllm_config: VllmConfig) -> Config:
    """The checkpoint's config, refusing by name what the plugin does not serve (as the engine)."""
    return checked(Config.of(vllm_config, FAMILY))


def checked(c: Config) -> Config:
    c.require("hidden_act", ("silu",), "MiMo's MLPs and experts use SwiGLU")
    c.require("rope_scaling", (None,), "RoPE scaling of the global layers")
    c.require("rope_parameters", (None,), "per-layer-type RoPE tables; give rope_theta fields")
    c.require("layer_types", (None,), "transformers' native spelling; give hybrid_layer_pattern")
    c.require("scoring_func", ("sigmoid", None), "MiMo routes with sigmoid scores")
    c.require("topk_method", ("noaux_tc", None), "group-limited routing with a score bias")
    c.require("attention_value_scale", (None, 1, 1.0), "a value scale")
    # vLLM's MiMo MoE does not scale the routed sum; MiMo-V2-Flash ships null.
    c.require("routed_scaling_factor", (None, 1, 1.0), "a routed scaling factor")
    c.need("hybrid_layer_pattern")
    if c.get("sliding_window", c.get("sliding_window_size")) is None:
        c.refuse("sliding_window", "the sliding layers need a window in tokens")
    return c


class MiMoDecoderLayer(PreNormLayer):
    def __init__(self, vllm_config: VllmConfig, prefix: str) -> None:
        super().__init__()
        c = read_config(vllm_config)
        layer = extract_layer_index(prefix)
        sliding = c.values["hybrid_layer_pattern"][layer] == 1
        factor = c.get("partial_rotary_factor", 1.0)
        # The sliding layers' fields carry a swa_ prefix and fall back to the global ones.
        pre = "swa_" if sliding else ""

        def size(name: str) -> int:
            return int(c.get(pre + name, c.need(name)))

        head_dim = size("head_dim")
        self.self_attn = PaddedValueAttention(
            vllm_config,
            family=FAMILY,
            hidden_size=int(c.need("hidden_size")),
            bias=bool(c.get("attention_bias", False)),
            num_heads=size("num_attention_heads"),
            num_kv_heads=size("num_key_value_heads"),
            head_dim=head_dim,
            v_head_dim=int(c.get(pre + "v_head_dim", c.get("v_head_dim", head_dim))),
            window=int(c.get("sliding_window", c.get("sliding_window_size"))) if sliding else None,
            sinks=bool(
                c.get("add_swa_attention_sink_bias", False)
                if sliding
                else c.get("add_full_attention_sink_bias", False)
            ),
            rope_theta=c.get("swa_rope_theta", 10_000) if sliding else c.get("rope_theta", 5e6),
            partial_factor=rotary_fraction(FAMILY, head_dim, factor),
            max_position=int(c.need("max_position_embeddings")),
            prefix=f"{prefix}.self_attn",
        )
        hidden = int(c.need("hidden_size"))
        eps = float(c.need("layernorm_epsilon"))
        freq = c.get("moe_layer_freq", [])
        if isinstance(freq, list) and layer < len(freq) and freq[layer]:
            self.mlp: nn.Module = MiMoV2MoE(vllm_config=vllm_config, prefix=f"{prefix}.mlp")
        else:
            self.mlp = MiMoV2MLP(
                hidden, int(c.need("intermediate_size")), "silu", prefix=f"{prefix}.mlp"
            )
        self.add_norms(hidden, eps)


class MiMoModel(nn.Module):
    """Embedding, decoder layers and final norm; loads weights with vLLM MiMo's own loader."""

    # vLLM's MiMo weight loading (q/k/v and gate/up stacking, experts, sinks) works on these
    # parameter names, which the plugin's layers keep.
    get_expert_mapping = MiMoV2Model.get_expert_mapping
    load_weights = MiMoV2Model.load_weights
    _try_load_fp8_qkv_proj = MiMoV2Model._try_load_fp8_qkv_proj

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__()
        config = vllm_config.model_config.hf_text_config
        read_config(vllm_config)
        self.config = config
        # vLLM copies config.json's sliding_window into the cache config, where Attention would
        # apply it to the global layers too; each layer passes its own window instead (as
        # vLLM's MiMo does).
        vllm_config.cache_config.sliding_window = None
        self.num_redundant_experts = vllm_config.parallel_config.eplb_config.num_redundant_experts
        self.embed_tokens = VocabParallelEmbedding(
            config.vocab_size, config.hidden_size, prefix=f"{prefix}.embed_tokens"
        )
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers,
            lambda prefix: MiMoDecoderLayer(vllm_config, prefix),
            prefix=f"{prefix}.layers",
        )
        self.norm = RMSNorm(config.hidden_size, eps=config.layernorm_epsilon)

    def embed_input_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.embed_tokens(input_ids)

    def forward(
        self,
        input_ids: torch.Tensor | None,
        positions: torch.Tensor,
        inputs_embeds: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if inputs_embeds is not None:
            hidden = inputs_embeds
        elif input_ids is not None:
            hidden = self.embed_input_ids(input_ids)
        else:
            raise ValueError("MiMo's forward needs input_ids or inputs_embeds")
        residual = None
        for layer in self.layers:
            hidden, residual = layer(positions, hidden, residual)
        hidden, _ = self.norm(hidden, residual)
        return hidden


class MiMoForCausalLM(nn.Module):
    packed_modules_mapping: ClassVar[dict[str, list[str]]] = {
        "qkv_proj": ["q_proj", "k_proj", "v_proj"],
        "gate_up_proj": ["gate_proj", "up_proj"],
    }

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__()
        config = vllm_config.model_config.hf_text_config
        self.config = config
        self.model = MiMoModel(vllm_config=vllm_config, prefix=maybe_prefix(prefix, "model"))
        if config.tie_word_embeddings:
            self.lm_head = self.model.embed_tokens
        else:
            self.lm_head = ParallelLMHead(
                config.vocab_size, config.hidden_size, prefix=maybe_prefix(prefix, "lm_head")
            )
        self.logits_processor = LogitsProcessor(config.vocab_size)

    def embed_input_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model.embed_input_ids(input_ids)

    def forward(
        self,
        input_ids: torch.Tensor | None,
        positions: torch.Tensor,
        intermediate_tensors: object = None,
        inputs_embeds: torch.Tensor | None = None,
    ) -> torch.Tensor:
        return self.model(input_ids, positions, inputs_embeds)

    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor | None:
        return self.logits_processor(self.lm_head, hidden_states)

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]:
        # The multi-token-prediction layers draft for speculative decoding, which is not served.
        skip = ["model.mtp."] + (["lm_head."] if self.config.tie_word_embeddings else [])
        # MiMo-V2.6-Pro ships its routed experts in MXFP4; they are decoded as they are read.
        loader = AutoWeightsLoader(self, ignore_unexpected_prefixes=skip)
        return loader.load_weights(decoded(weights))
