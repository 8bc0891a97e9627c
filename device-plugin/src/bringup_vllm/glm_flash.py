"""GLM-5.3-Flash (port glm-5.3-flash): Kimi Linear's KDA layers and latent attention, joined by
DeepSeek-V4's mHC residual, with sigmoid-routed experts after the first dense layers.

It reads the config fields and tensor names bringup's engine reads
(src/engine/models/glm-5.3-flash.ts): Kimi Linear's `linear_attn_config` (1-based `kda_layers`
and `full_attn_layers`), its latent attention (`q_proj` or `q_a_proj`/`q_b_proj`,
`kv_a_proj_with_mqa`, `kv_a_layernorm`, `kv_b_proj`, `o_proj`; `mla_use_nope`), its experts
under `block_sparse_moe` (`gate` with `e_score_correction_bias`, `experts.E.w1/w2/w3`), dense
layers' `mlp.gate/up/down_proj`, and DeepSeek-V4's `hc_mult`, `hc_sinkhorn_iters`, `hc_eps`.

Every block is plain PyTorch (kda.py, mhc.py, and the attention and experts here): vLLM runs
Kimi Linear's KDA on FLA's Triton kernels and keeps its per-sequence state in its Mamba-style
state cache, which neither its CPU backend nor vllm-gaudi provides for this model, and it has no
mHC at all. So the port is not served by vLLM here: the architecture is registered, and building
it in vLLM refuses by name (NotServedError); the blocks are checked one by one against the engine
on the tiny checkpoint (tests/test_glm_flash_blocks.py, over `bringup device blocks`).
"""

from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from bringup_vllm.config_check import Config, UnsupportedConfigError
from bringup_vllm.kda import KdaMixer, KdaState
from bringup_vllm.mhc import HyperConnection, HyperHead, MhcConfig
from bringup_vllm.norm import Norm

FAMILY = "GLM-5.3-Flash"


class NotServedError(UnsupportedConfigError):
    """The family's blocks exist, but vLLM cannot serve the model they make; says what lacks."""


def checked(c: Config) -> Config:
    """Refuse by name what the engine refuses or this code does not compute."""
    c.require("model_type", ("glm5_3_flash",), "this family's model type")
    c.require("hidden_act", (None, "silu"), "the experts and MLPs use SwiGLU")
    c.require("attention_bias", (None, False), "the projections have no biases")
    c.require("num_shared_experts", (None, 0), "shared experts are not in the engine's model yet")
    c.require("moe_layer_freq", (None, 1), "experts in every layer after the dense ones")
    c.require("moe_router_activation_func", (None, "sigmoid", "softmax"), "sigmoid or softmax")
    c.require("rope_scaling", (None,), "RoPE scaling of the latent attention's rotary part")
    lin = c.need("linear_attn_config")
    layers = int(c.need("num_hidden_layers"))
    kda, full = set(lin["kda_layers"]), set(lin["full_attn_layers"])
    if kda & full or kda | full != set(range(1, layers + 1)):
        c.refuse("linear_attn_config", "every layer, 1-based, in exactly one of the two lists")
    return c


def _linear(i: int, o: int) -> nn.Linear:
    return nn.Linear(i, o, bias=False)


def rotate_adjacent_pairs(x: torch.Tensor, theta: float) -> torch.Tensor:
    """RoPE on x [T, ..., d] at positions 0..T-1, pairs (2i, 2i+1) as DeepSeek's complex form."""
    T, d = x.shape[0], x.shape[-1]
    freq = theta ** -(torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = torch.arange(T, dtype=torch.float64)[:, None] * freq
    shape = (T,) + (1,) * (x.dim() - 2) + (d // 2,)
    cos, sin = angle.cos().float().view(shape), angle.sin().float().view(shape)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], -1).flatten(-2)


class LatentAttention(nn.Module):
    """Kimi Linear's full-attention layer: multi-head latent attention over one sequence, causal.

    Keys and values are decompressed per head through kv_b_proj (vLLM's non-latent path computes
    the same); the rotary part is left unrotated under `mla_use_nope` (Kimi Linear's default).
    """

    def __init__(self, c: Config, hidden: int, eps: float) -> None:
        super().__init__()
        self.heads = int(c.need("num_attention_heads"))
        self.nope, self.rope = int(c.need("qk_nope_head_dim")), int(c.need("qk_rope_head_dim"))
        self.value = int(c.need("v_head_dim"))
        self.rank = int(c.need("kv_lora_rank"))
        q_rank = int(c.get("q_lora_rank", 0))
        self.theta = None if c.get("mla_use_nope", True) else float(c.get("rope_theta", 10_000))
        qk = self.heads * (self.nope + self.rope)
        if q_rank > 0:
            self.q_a_proj, self.q_b_proj = _linear(hidden, q_rank), _linear(q_rank, qk)
            self.q_a_layernorm = Norm(q_rank, eps)
        else:
            self.q_proj = _linear(hidden, qk)
        self.kv_a_proj_with_mqa = _linear(hidden, self.rank + self.rope)
        self.kv_a_layernorm = Norm(self.rank, eps)
        self.kv_b_proj = _linear(self.rank, self.heads * (self.nope + self.value))
        self.o_proj = _linear(self.heads * self.value, hidden)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        T, nh = h.shape[0], self.heads
        if hasattr(self, "q_proj"):
            q = self.q_proj(h)
        else:
            q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(h)))
        q = q.view(T, nh, self.nope + self.rope)
        latent, k_pe = self.kv_a_proj_with_mqa(h).split([self.rank, self.rope], -1)
        kv = self.kv_b_proj(self.kv_a_layernorm(latent)).view(T, nh, self.nope + self.value)
        k_nope, v = kv.split([self.nope, self.value], -1)
        if self.theta is not None:
            q_nope, q_pe = q.split([self.nope, self.rope], -1)
            q = torch.cat([q_nope, rotate_adjacent_pairs(q_pe, self.theta)], -1)
            k_pe = rotate_adjacent_pairs(k_pe, self.theta)
        k = torch.cat([k_nope, k_pe.unsqueeze(1).expand(T, nh, self.rope)], -1)
        out = F.scaled_dot_product_attention(
            q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), is_causal=True
        )
        return self.o_proj(out.transpose(0, 1).reshape(T, nh * self.value))


class SwigluMlp(nn.Module):
    """down(silu(gate(x)) * up(x)) under HF's (gate/up/down_proj) or Mixtral's (w1/w3/w2) names."""

    def __init__(self, hidden: int, inner: int, names: tuple[str, str, str]) -> None:
        super().__init__()
        self.names = names
        gate, up, down = names
        setattr(self, gate, _linear(hidden, inner))
        setattr(self, up, _linear(hidden, inner))
        setattr(self, down, _linear(inner, hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up, down = (getattr(self, n) for n in self.names)
        out: torch.Tensor = down(F.silu(gate(x)) * up(x))
        return out


class Router(nn.Module):
    def __init__(self, hidden: int, experts: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(experts, hidden))
        self.e_score_correction_bias = nn.Parameter(torch.zeros(experts))


class RoutedExperts(nn.Module):
    """Kimi Linear's `block_sparse_moe`: the bias only chooses experts (as DeepSeek-V3's noaux_tc);
    the chosen ones are weighted by their scores, renormalized, times routed_scaling_factor."""

    def __init__(self, c: Config, hidden: int) -> None:
        super().__init__()
        self.num = int(c.need("num_experts"))
        self.top_k = int(c.need("num_experts_per_token"))
        self.groups, self.top_groups = (
            int(c.get("num_expert_group", 1)),
            int(c.get("topk_group", 1)),
        )
        self.sigmoid = c.get("moe_router_activation_func", "sigmoid") == "sigmoid"
        self.renormalize = bool(c.get("moe_renormalize", True))
        self.scale = float(c.get("routed_scaling_factor", 1.0))
        inner = int(c.need("moe_intermediate_size"))
        self.gate = Router(hidden, self.num)
        self.experts = nn.ModuleList(
            SwigluMlp(hidden, inner, ("w1", "w3", "w2")) for _ in range(self.num)
        )

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        logits = h.double() @ self.gate.weight.double().t()
        scores = logits.sigmoid() if self.sigmoid else logits.softmax(-1)
        corrected = scores + self.gate.e_score_correction_bias.double()
        if self.groups > 1 and self.top_groups < self.groups:
            grouped = corrected.view(h.shape[0], self.groups, -1)
            group_scores = grouped.topk(min(2, grouped.shape[-1]), -1).values.sum(-1)
            keep = group_scores.topk(self.top_groups, -1).indices
            mask = torch.zeros_like(group_scores, dtype=torch.bool).scatter(1, keep, True)
            corrected = grouped.masked_fill(~mask.unsqueeze(-1), -torch.inf).view_as(corrected)
        chosen = corrected.topk(self.top_k, -1).indices
        weights = scores.gather(1, chosen)
        if self.renormalize:
            weights = weights / weights.sum(-1, keepdim=True)
        weights = (weights * self.scale).float()
        out = torch.zeros_like(h)
        for rank in range(self.top_k):
            for e in chosen[:, rank].unique().tolist():
                rows = chosen[:, rank] == e
                out[rows] += weights[rows, rank : rank + 1] * self.experts[e](h[rows])
        return out


class GlmFlashLayer(nn.Module):
    """One layer: a KDA or latent-attention mixer and an MLP or experts, each behind an mHC site."""

    def __init__(self, c: Config, index: int, mhc: MhcConfig) -> None:
        super().__init__()
        hidden, eps = int(c.need("hidden_size")), float(c.get("rms_norm_eps", 1e-6))
        lin = c.need("linear_attn_config")
        self.kda = index + 1 in lin["kda_layers"]
        self.self_attn: nn.Module = (
            KdaMixer(
                hidden,
                int(lin["num_heads"]),
                int(lin["head_dim"]),
                int(lin.get("short_conv_kernel_size", 4)),
            )
            if self.kda
            else LatentAttention(c, hidden, eps)
        )
        moe = c.get("num_experts") is not None and index >= int(c.get("first_k_dense_replace", 0))
        if moe:
            self.block_sparse_moe = RoutedExperts(c, hidden)
        else:
            self.mlp = SwigluMlp(
                hidden, int(c.need("intermediate_size")), ("gate_proj", "up_proj", "down_proj")
            )
        self.input_layernorm, self.post_attention_layernorm = Norm(hidden, eps), Norm(hidden, eps)
        self.attn_hc, self.ffn_hc = HyperConnection(mhc, hidden), HyperConnection(mhc, hidden)

    def mixer_block(
        self, streams: torch.Tensor, state: KdaState | None = None, chunk: bool = True
    ) -> tuple[torch.Tensor, KdaState | None]:
        """The mixer's site over one sequence's run of tokens (the KDA state carried, if KDA)."""
        after: list[KdaState | None] = [None]

        def block(h: torch.Tensor) -> torch.Tensor:
            if isinstance(self.self_attn, KdaMixer):
                out, after[0] = self.self_attn(h, state, chunk)
                return out
            result: torch.Tensor = self.self_attn(h)
            return result

        return self.attn_hc(streams, self.input_layernorm.weight, block), after[0]

    def ffn_block(self, streams: torch.Tensor) -> torch.Tensor:
        ffn = self.block_sparse_moe if hasattr(self, "block_sparse_moe") else self.mlp
        out: torch.Tensor = self.ffn_hc(streams, self.post_attention_layernorm.weight, ffn)
        return out


class GlmFlashModel(nn.Module):
    """`model.*`: the embedding, the layers, the hyper head and the final norm."""

    def __init__(self, c: Config) -> None:
        super().__init__()
        hidden = int(c.need("hidden_size"))
        eps = float(c.get("rms_norm_eps", 1e-6))
        self.mhc = MhcConfig(
            int(c.get("hc_mult", 4)),
            int(c.get("hc_sinkhorn_iters", 20)),
            float(c.get("hc_eps", 1e-6)),
            eps,
        )
        self.embed_tokens = nn.Embedding(int(c.need("vocab_size")), hidden)
        self.layers = nn.ModuleList(
            GlmFlashLayer(c, i, self.mhc) for i in range(int(c.need("num_hidden_layers")))
        )
        self.hc_head = HyperHead(self.mhc, hidden)
        self.norm = Norm(hidden, eps)


class GlmFlashReference(nn.Module):
    """The whole model in plain PyTorch over one sequence, loaded from the checkpoint's tensors."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__()
        c = checked(Config(config, FAMILY))
        self.model = GlmFlashModel(c)
        self.tied = bool(c.get("tie_word_embeddings", False))
        if not self.tied:
            self.lm_head = _linear(int(c.need("hidden_size")), int(c.need("vocab_size")))

    @classmethod
    def from_checkpoint(
        cls, config: dict[str, Any], weights: dict[str, torch.Tensor]
    ) -> "GlmFlashReference":
        """Every checkpoint tensor into its parameter by name; a missing or extra one is refused."""
        model = cls(config)
        model.load_state_dict(weights, strict=True)
        return model.eval()

    def layers(self) -> list["GlmFlashLayer"]:
        return [cast(GlmFlashLayer, layer) for layer in self.model.layers]

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Token ids to the residual streams [T, n * hidden], each a copy of the embedding."""
        out: torch.Tensor = self.model.embed_tokens(input_ids).repeat(1, self.model.mhc.streams)
        return out

    def head(self, streams: torch.Tensor) -> torch.Tensor:
        hidden = self.model.norm(self.model.hc_head(streams))
        weight = self.model.embed_tokens.weight if self.tied else self.lm_head.weight
        return hidden @ weight.t()

    def forward(self, input_ids: torch.Tensor, chunk: bool = True) -> torch.Tensor:
        """Logits [T, vocab] of one sequence's prompt."""
        streams = self.embed(input_ids)
        for layer in self.layers():
            streams, _ = layer.mixer_block(streams, None, chunk)
            streams = layer.ffn_block(streams)
        return self.head(streams)


def not_served(c: Config) -> None:
    """Checks the config (so an unserved field is named first, as for every family), then refuses
    to build the model in vLLM, saying what is missing and where the blocks are checked instead."""
    checked(c)
    raise NotServedError(
        f"{FAMILY}: vLLM cannot serve this model with bringup_vllm yet: its KDA layers keep a "
        "per-sequence recurrent state and convolution tails that would need vLLM's "
        "Mamba-style state cache, which its CPU backend and vllm-gaudi lack for KDA (vLLM's "
        "own Kimi Linear runs FLA's Triton kernels). The plugin's plain-PyTorch blocks are "
        "checked against bringup's engine layer by layer instead: "
        "device-plugin/tests/test_glm_flash_blocks.py."
    )


class Glm53FlashForCausalLM(nn.Module):
    """The class vLLM finds for `Glm53FlashForCausalLM` checkpoints: it refuses (not_served)."""

    def __init__(self, *, vllm_config: Any, prefix: str = "") -> None:
        super().__init__()
        not_served(Config.of(vllm_config, FAMILY))
