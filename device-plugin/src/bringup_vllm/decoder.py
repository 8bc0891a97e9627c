"""The decoder-only skeleton the plugin's families share: pre-norm layers, the stack, the LM head.

Each family builds its own attention and feed-forward blocks and its weight loading; what stays the
same across them (vLLM's fused add-and-norm residual, embedding -> layers -> final norm, the tied or
separate LM head) is said here once.
"""

from collections.abc import Callable, Iterable

import torch
from torch import nn
from vllm.config import VllmConfig
from vllm.model_executor.layers.layernorm import RMSNorm
from vllm.model_executor.layers.logits_processor import LogitsProcessor
from vllm.model_executor.layers.vocab_parallel_embedding import (
    ParallelLMHead,
    VocabParallelEmbedding,
)
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.models.utils import make_layers, maybe_prefix

from bringup_vllm.config_check import Config
from bringup_vllm.mxfp4 import decoded


class PreNormLayer(nn.Module):
    """x + attn(norm(x)), then + mlp(norm(x)); subclasses set self_attn and mlp, then the norms."""

    self_attn: nn.Module
    mlp: nn.Module

    def add_norms(self, hidden: int, eps: float) -> None:
        self.input_layernorm = RMSNorm(hidden, eps=eps)
        self.post_attention_layernorm = RMSNorm(hidden, eps=eps)

    def forward(
        self, positions: torch.Tensor, hidden: torch.Tensor, residual: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # vLLM's RMSNorm adds the residual and normalizes in one step when given one.
        if residual is None:
            residual = hidden
            hidden = self.input_layernorm(hidden)
        else:
            hidden, residual = self.input_layernorm(hidden, residual)
        hidden = self.self_attn(positions, hidden)
        hidden, residual = self.post_attention_layernorm(hidden, residual)
        return self.mlp(hidden), residual


class DecoderStack(nn.Module):
    """Embedding, `num_hidden_layers` layers made by `layer`, final norm (HF's `model.*` names)."""

    def __init__(
        self,
        vllm_config: VllmConfig,
        c: Config,
        layer: Callable[[VllmConfig, str], nn.Module],
        eps: float,
        prefix: str,
    ) -> None:
        super().__init__()
        hidden = int(c.need("hidden_size"))
        self.embed_tokens = VocabParallelEmbedding(
            int(c.need("vocab_size")), hidden, prefix=f"{prefix}.embed_tokens"
        )
        self.start_layer, self.end_layer, self.layers = make_layers(
            int(c.need("num_hidden_layers")),
            lambda prefix: layer(vllm_config, prefix),
            prefix=f"{prefix}.layers",
        )
        self.norm = RMSNorm(hidden, eps=eps)

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        hidden = self.embed_tokens(input_ids)
        residual = None
        for layer in self.layers:
            hidden, residual = layer(positions, hidden, residual)
        hidden, _ = self.norm(hidden, residual)
        return hidden


def windowed_stack(
    vllm_config: VllmConfig,
    c: Config,
    layer: Callable[[VllmConfig, str], nn.Module],
    eps: float,
    prefix: str,
    stack: type[DecoderStack] = DecoderStack,
) -> DecoderStack:
    """The stack under `model` of a family whose layers each pass their own sliding window.

    vLLM copies config.json's sliding_window into the cache config, where Attention would apply it
    to the global layers too.
    """
    vllm_config.cache_config.sliding_window = None
    return stack(vllm_config, c, layer, eps, prefix=maybe_prefix(prefix, "model"))


class DecoderLM(nn.Module):
    """Token ids in, logits out, over a family's DecoderStack under `model`."""

    def __init__(self, c: Config, model: DecoderStack, prefix: str) -> None:
        super().__init__()
        vocab, hidden = int(c.need("vocab_size")), int(c.need("hidden_size"))
        self.family = c.family
        self.tied = bool(c.get("tie_word_embeddings", False))
        self.model = model
        self.lm_head = (
            model.embed_tokens
            if self.tied
            else ParallelLMHead(vocab, hidden, prefix=maybe_prefix(prefix, "lm_head"))
        )
        self.logits_processor = LogitsProcessor(vocab)

    def embed_input_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.model.embed_tokens(input_ids)
        return out

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        intermediate_tensors: object = None,
        inputs_embeds: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if inputs_embeds is not None:
            raise ValueError(f"{self.family}: inputs_embeds are not served; give token ids.")
        out: torch.Tensor = self.model(input_ids, positions)
        return out

    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor | None:
        return self.logits_processor(self.lm_head, hidden_states)

    def load_mapped(
        self,
        weights: Iterable[tuple[str, torch.Tensor]],
        to_parameter: Callable[[str], tuple[str, str | int | None]],
        place: Callable[[str, nn.Parameter, torch.Tensor, str | int | None], bool],
    ) -> set[str]:
        """Loads each checkpoint tensor (MXFP4 decoded) into the parameter `to_parameter` names.

        `to_parameter` also gives the shard or expert the tensor fills; `place` loads what vLLM's
        own weight loaders cannot and returns whether it did. A tensor with no parameter is refused.
        """
        params = dict(self.named_parameters())
        loaded: set[str] = set()
        for name, tensor in decoded(weights):
            if self.tied and name.startswith("lm_head."):
                continue
            target, part = to_parameter(name)
            if target not in params:
                raise ValueError(
                    f"{self.family}: the checkpoint's tensor {name} has no place here."
                )
            param = params[target]
            if place(target, param, tensor, part):
                pass
            elif part is not None:
                param.weight_loader(param, tensor, part)  # type: ignore[attr-defined]
            else:
                getattr(param, "weight_loader", default_weight_loader)(param, tensor)
            loaded.add(target)
        return loaded
