"""The Muse Spark Open family (port muse-spark-open) on vLLM.

It reads the config fields and tensor names bringup's engine reads (src/engine/models/
muse-spark.ts): grouped-query attention whose layers interleave a sliding window with global
attention (gpt-oss's `layer_types` and `sliding_window`, MiMo's `swa_num_attention_heads` and
`swa_num_key_value_heads`), and a latent mixture of experts (Nemotron-H's LatentMoE, arXiv
2601.18089; vLLM `models/nemotron_h.py` `NemotronHMoE`) whose experts are stored in MXFP4 and
whose every expert output passes through its own RMSNorm (`experts.N.output_norm.weight`, the
port's own) before the router weights combine them.

vLLM's fused MoE has no place for a norm between an expert's down projection and the combine, so
the latent MoE is plain PyTorch with static shapes (`LatentMoe`): every expert runs on every
token and the router's weights, zero for the experts a token did not choose, combine them. The
routing is vLLM's own `grouped_topk` (sigmoid scores, a score-correction bias that only chooses,
group-limited top-k, renormalized, scaled). The attention is the plugin's padded-head attention
(attention.py), the MXFP4 experts are decoded to float32 as they are read (mxfp4.py).
"""

from collections.abc import Iterable

import torch
from torch import nn
from vllm.config import VllmConfig
from vllm.model_executor.layers.fused_moe.router.grouped_topk_router import grouped_topk
from vllm.model_executor.layers.linear import ReplicatedLinear
from vllm.model_executor.models.utils import extract_layer_index

from bringup_vllm.attention import PaddedValueAttention, qkv_shard, rotary_fraction
from bringup_vllm.config_check import Config
from bringup_vllm.decoder import DecoderLM, PreNormLayer, windowed_stack

FAMILY = "Muse Spark Open"
DEFAULT_EPS = 1e-5
LAYER_KINDS = ("sliding_attention", "full_attention")


def read_config(vllm_config: VllmConfig) -> Config:
    """The checkpoint's config, refusing by name what the plugin does not serve (as the engine)."""
    return checked(Config.of(vllm_config, FAMILY))


def checked(c: Config) -> Config:
    c.require("model_type", ("muse_spark",), "the family's model_type")
    c.require("rope_scaling", (None,), "RoPE scaling")
    c.require("rope_parameters", (None,), "RoPE parameter tables; give rope_theta")
    c.require("mlp_hidden_act", ("relu2", None), "Nemotron-H's experts use relu2")
    c.require("mlp_bias", (False, None), "the experts have no biases")
    kinds = c.need("layer_types")
    if len(kinds) != int(c.need("num_hidden_layers")):
        c.refuse("layer_types", "give one entry per layer")
    if any(kind not in LAYER_KINDS for kind in kinds):
        c.refuse("layer_types", "each entry is sliding_attention or full_attention")
    c.need("sliding_window")
    for sliding in (False, True):
        heads, kv_heads = layer_heads(c, sliding)
        if heads % kv_heads:
            c.refuse(
                "swa_num_attention_heads" if sliding else "num_attention_heads",
                f"{heads} query heads are not a multiple of {kv_heads} key/value heads",
            )
    experts, groups = int(c.need("n_routed_experts")), int(c.get("n_group", 1))
    if experts % groups:
        c.refuse("n_group", f"{experts} experts do not split into equal groups")
    if int(c.get("topk_group", 1)) > groups:
        c.refuse("topk_group", "more groups chosen than there are")
    if int(c.need("num_experts_per_tok")) > experts // groups * int(c.get("topk_group", 1)):
        c.refuse("num_experts_per_tok", "more experts per token than the eligible groups hold")
    for name in ("moe_latent_size", "moe_intermediate_size", "head_dim", "hidden_size"):
        c.need(name)
    return c


def layer_heads(c: Config, sliding: bool) -> tuple[int, int]:
    """Query and key/value heads of a layer; the sliding ones' `swa_` fields fall back."""
    heads, kv_heads = int(c.need("num_attention_heads")), int(c.need("num_key_value_heads"))
    if sliding:
        return int(c.get("swa_num_attention_heads", heads)), int(
            c.get("swa_num_key_value_heads", kv_heads)
        )
    return heads, kv_heads


def relu2(x: torch.Tensor) -> torch.Tensor:
    """Nemotron-H's expert activation, max(x, 0)^2."""
    return torch.relu(x).square()


class LatentMoe(nn.Module):
    """LatentMoE with a norm on every expert's output (the engine's blocks/mlp/latent-moe.ts).

    The router scores the full hidden state; `fc1_latent_proj` takes the token to the latent
    width, where each expert (a relu2 MLP) runs and its output is RMS-normalized with its own
    `output_norm`; the router weights combine the normalized outputs and `fc2_latent_proj` takes
    the sum back to the hidden width. A shared relu2 expert on the full hidden state is added.
    The experts' parameters are stacked, [experts, ...], so the whole block has static shapes.
    """

    def __init__(self, c: Config, prefix: str) -> None:
        super().__init__()
        hidden, latent = int(c.need("hidden_size")), int(c.need("moe_latent_size"))
        experts, inner = int(c.need("n_routed_experts")), int(c.need("moe_intermediate_size"))
        shared = int(c.get("moe_shared_expert_intermediate_size", 0))
        self.top_k = int(c.need("num_experts_per_tok"))
        self.groups, self.top_groups = int(c.get("n_group", 1)), int(c.get("topk_group", 1))
        self.renormalize = bool(c.get("norm_topk_prob", True))
        self.scaling = float(c.get("routed_scaling_factor", 1.0))
        self.eps = float(c.get("rms_norm_eps", DEFAULT_EPS))
        self.gate = ReplicatedLinear(hidden, experts, bias=False, prefix=f"{prefix}.gate")
        self.gate.e_score_correction_bias = nn.Parameter(torch.zeros(experts), requires_grad=False)
        self.fc1_latent_proj = ReplicatedLinear(
            hidden, latent, bias=False, prefix=f"{prefix}.fc1_latent_proj"
        )
        self.fc2_latent_proj = ReplicatedLinear(
            latent, hidden, bias=False, prefix=f"{prefix}.fc2_latent_proj"
        )
        self.up = nn.Parameter(torch.empty(experts, inner, latent), requires_grad=False)
        self.down = nn.Parameter(torch.empty(experts, latent, inner), requires_grad=False)
        self.output_norm = nn.Parameter(torch.empty(experts, latent), requires_grad=False)
        self.shared_experts: nn.ModuleDict | None = None
        if shared > 0:
            self.shared_experts = nn.ModuleDict(
                {
                    "up_proj": ReplicatedLinear(
                        hidden, shared, bias=False, prefix=f"{prefix}.shared_experts.up_proj"
                    ),
                    "down_proj": ReplicatedLinear(
                        shared, hidden, bias=False, prefix=f"{prefix}.shared_experts.down_proj"
                    ),
                }
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits, _ = self.gate(x)
        bias = self.gate.e_score_correction_bias
        assert isinstance(bias, torch.Tensor)
        weights, chosen = grouped_topk(
            x,
            logits,
            self.top_k,
            self.renormalize,
            num_expert_group=self.groups,
            topk_group=self.top_groups,
            scoring_func="sigmoid",
            routed_scaling_factor=self.scaling,
            e_score_correction_bias=bias,
        )
        mix = torch.zeros_like(logits).scatter(1, chosen.long(), weights.to(logits.dtype))
        latent, _ = self.fc1_latent_proj(x)
        inner = relu2(torch.einsum("tl,eil->eti", latent, self.up))
        out = torch.einsum("eti,eli->etl", inner, self.down)
        out = out * torch.rsqrt(out.square().mean(-1, keepdim=True) + self.eps)
        out = out * self.output_norm.unsqueeze(1)
        result, _ = self.fc2_latent_proj(torch.einsum("te,etl->tl", mix, out))
        if self.shared_experts is not None:
            up, _ = self.shared_experts["up_proj"](x)
            shared, _ = self.shared_experts["down_proj"](relu2(up))
            result = result + shared
        return result


class SparkDecoderLayer(PreNormLayer):
    def __init__(self, vllm_config: VllmConfig, prefix: str) -> None:
        super().__init__()
        c = read_config(vllm_config)
        sliding = c.values["layer_types"][extract_layer_index(prefix)] == "sliding_attention"
        heads, kv_heads = layer_heads(c, sliding)
        hidden, head_dim = int(c.need("hidden_size")), int(c.need("head_dim"))
        self.self_attn = PaddedValueAttention(
            vllm_config,
            family=FAMILY,
            hidden_size=hidden,
            bias=bool(c.get("attention_bias", False)),
            num_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            v_head_dim=head_dim,
            window=int(c.need("sliding_window")) if sliding else None,
            sinks=False,
            rope_theta=float(c.get("rope_theta", 10_000)),
            partial_factor=rotary_fraction(FAMILY, head_dim, c.get("partial_rotary_factor", 1.0)),
            max_position=int(c.need("max_position_embeddings")),
            prefix=f"{prefix}.self_attn",
        )
        self.mlp = LatentMoe(c, prefix=f"{prefix}.mlp")
        self.add_norms(hidden, float(c.get("rms_norm_eps", DEFAULT_EPS)))


# A routed expert's tensors, `mlp.experts.N.<name>`, and LatentMoe's stacked parameter of them.
_EXPERT_PARTS = {
    "up_proj.weight": "up",
    "down_proj.weight": "down",
    "output_norm.weight": "output_norm",
}


def checkpoint_to_parameter(name: str) -> tuple[str, str | int | None]:
    """A checkpoint tensor's parameter here and its q/k/v shard or expert index (None: whole)."""
    qkv = qkv_shard(name)
    if qkv is not None:
        return qkv
    parts = name.split(".")
    if len(parts) >= 5 and parts[-4] == "experts" and ".".join(parts[-2:]) in _EXPERT_PARTS:
        return ".".join([*parts[:-4], _EXPERT_PARTS[".".join(parts[-2:])]]), int(parts[-3])
    return name, None


class SparkForCausalLM(DecoderLM):
    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        c = read_config(vllm_config)
        eps = float(c.get("rms_norm_eps", DEFAULT_EPS))
        super().__init__(c, windowed_stack(vllm_config, c, SparkDecoderLayer, eps, prefix), prefix)

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]:
        def place(
            target: str, param: nn.Parameter, tensor: torch.Tensor, part: str | int | None
        ) -> bool:
            if isinstance(part, int):  # one expert's matrix in the stacked parameter
                param.data[part].copy_(tensor)
                return True
            return False

        return self.load_mapped(weights, checkpoint_to_parameter, place)
