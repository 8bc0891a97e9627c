"""GLM-5 (port glm-5-mxfp4: `glm_moe_dsa`, GlmMoeDsaForCausalLM) on vLLM: the DeepSeek-V3 layout
of deepseek.py with DeepSeek sparse attention's indexer in every layer.

It reads the config fields and tensor names bringup's engine reads for this lineage
(src/engine/models/deepseek-v3.ts with blocks/attention/dsa-indexer.ts): deepseek.py's latent
attention, MoE, MLP and weight loader (vLLM DeepSeek's), plus `index_n_heads`, `index_head_dim`,
`index_topk`, `indexer_rope_interleave` and quantization_config's `scale_fmt`, and the indexer's
`self_attn.indexer.*` tensors (dsa.py).

vLLM's DSA path (vllm/model_executor/models/deepseek_v2.py's Indexer on a sparse MLA backend) has
DeepGEMM, Triton, ROCm and XPU kernels and no CPU path; vllm-gaudi runs these layers as dense MLA.
Here each layer computes its attention itself, over the positions the indexer picks: per-head
keys and values (decompressed through kv_b_proj as deepseek.py does) and indexer keys are kept in
the layer's own caches, indexed by the slots vLLM's scheduler gives each token (the attention
metadata's slot mapping and block tables), so chunked prefill, prefix caching and batching read
the right rows. vLLM still plans and schedules the per-head KV cache through the layer's `attn`
(deepseek.py), which it is never asked to compute.
"""

from typing import Any

import torch
from vllm.config import VllmConfig
from vllm.forward_context import get_forward_context

from bringup_vllm.config_check import Config
from bringup_vllm.deepseek import (
    DeepseekDecoderLayer,
    DeepseekForCausalLM,
    DeepseekModel,
    LatentAsHeadsAttention,
    checked_layout,
)
from bringup_vllm.dsa import DsaIndexer, index_scores, selected

FAMILY = "GLM-5"


def read_config(vllm_config: VllmConfig) -> Config:
    """The checkpoint's config, refusing by name what the plugin does not serve (as the engine)."""
    return checked(Config.of(vllm_config, FAMILY))


def checked(c: Config) -> Config:
    checked_layout(c)
    c.need("index_topk")
    c.need("index_n_heads")
    c.need("index_head_dim")
    types = c.get("indexer_types", [])
    if "shared" in types:
        c.refuse("indexer_types", "a layer reusing the previous layer's top-k")
    return c


class SlotCache:
    """Rows per KV-cache slot of one layer, grown as vLLM hands out higher slots: at most as many
    as vLLM's own per-head cache holds, each row smaller than its padded heads."""

    def __init__(self, *row_shape: int) -> None:
        self.rows = torch.zeros(0, *row_shape)

    def write(self, slots: torch.Tensor, values: torch.Tensor) -> None:
        needed = int(slots.max()) + 1
        if needed > self.rows.shape[0]:
            grown = torch.zeros(max(needed, 2 * self.rows.shape[0]), *self.rows.shape[1:])
            grown[: self.rows.shape[0]] = self.rows
            self.rows = grown
        self.rows[slots] = values.to(self.rows.dtype)


class SparseLatentAttention(LatentAsHeadsAttention):
    """deepseek.py's latent attention, each query attending only the positions its indexer picks."""

    def __init__(self, vllm_config: VllmConfig, c: Config, prefix: str) -> None:
        super().__init__(vllm_config, c, prefix)
        hidden = int(c.need("hidden_size"))
        self.indexer = DsaIndexer(c, hidden, self.q_rank, self.theta, prefix=f"{prefix}.indexer")
        self.block_size = vllm_config.cache_config.block_size
        self.keys = SlotCache(self.heads, self.qk)
        self.values = SlotCache(self.heads, self.value)
        self.index_keys = SlotCache(self.indexer.dim)

    def forward(self, positions: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        q, k, value, q_latent = self.project(positions, hidden)
        index_q, index_w, index_k = self.indexer.project(hidden, q_latent, positions)
        out = torch.zeros(hidden.shape[0], self.heads, self.value)
        metadata = _attention_metadata(self.attn.layer_name)
        # Without metadata (vLLM's warm-up and profiling runs) there is no cache and attention
        # adds nothing, as vLLM's CPU backend returns its output untouched then.
        if metadata is not None:
            self.attend_cached(metadata, positions, q, k, value, index_q, index_w, index_k, out)
        result, _ = self.o_proj(out.reshape(hidden.shape[0], -1))
        return result

    def attend_cached(
        self,
        metadata: Any,
        positions: torch.Tensor,
        q: torch.Tensor,
        k: torch.Tensor,
        value: torch.Tensor,
        index_q: torch.Tensor,
        index_w: torch.Tensor,
        index_k: torch.Tensor,
        out: torch.Tensor,
    ) -> None:
        """Writes the batch's rows at their slots; attends each request over its cached rows."""
        real = int(metadata.num_actual_tokens)
        slots = metadata.slot_mapping[:real].long()
        self.keys.write(slots, k[:real])
        self.values.write(slots, value[:real])
        self.index_keys.write(slots, index_k[:real])
        starts = metadata.query_start_loc.tolist()
        for r, length in enumerate(metadata.seq_lens.tolist()):
            first, end = starts[r], starts[r + 1]
            if end == first:
                continue
            cached = slots_of(metadata.block_table[r], length, self.block_size)
            if not torch.equal(cached[length - (end - first) :], slots[first:end]):
                raise RuntimeError(
                    f"{FAMILY}: the block table and slot mapping disagree at block size "
                    f"{self.block_size}; the plugin's caches assume vLLM's cache_config.block_size."
                )
            out[first:end] = self.attend(
                q[first:end],
                self.keys.rows[cached],
                self.values.rows[cached],
                index_q[first:end],
                index_w[first:end],
                self.index_keys.rows[cached],
                positions[first:end],
            )

    def attend(
        self,
        q: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        index_q: torch.Tensor,
        index_w: torch.Tensor,
        index_keys: torch.Tensor,
        positions: torch.Tensor,
    ) -> torch.Tensor:
        """Queries [n, heads, qk] at `positions` over a sequence's keys [L, heads, qk] and values
        [L, heads, v], each attending only the positions its indexer scores select."""
        visible = selected(
            index_scores(index_q, index_w, index_keys), positions, self.indexer.top_k
        )
        logits = torch.einsum("nhd,lhd->hnl", q, keys) * self.qk**-0.5
        weights = logits.masked_fill(~visible, float("-inf")).softmax(dim=-1)
        return torch.einsum("hnl,lhd->nhd", weights, values)


def slots_of(block_table: torch.Tensor, length: int, block_size: int) -> torch.Tensor:
    """The cache slots of positions 0 .. length - 1 of the request with this block table."""
    p = torch.arange(length)
    return block_table[p // block_size].long() * block_size + p % block_size


# What the caches read from vLLM's CPU attention metadata (CPUAttentionMetadata).
METADATA_FIELDS = (
    "num_actual_tokens",
    "query_start_loc",
    "seq_lens",
    "block_table",
    "slot_mapping",
)


def _attention_metadata(layer_name: str) -> Any:
    """The CPU attention metadata of `layer_name` for this forward pass; None while profiling."""
    every: Any = get_forward_context().attn_metadata
    metadata = every.get(layer_name) if isinstance(every, dict) else every
    missing = [f for f in METADATA_FIELDS if metadata is not None and not hasattr(metadata, f)]
    if missing:
        raise RuntimeError(
            f"{FAMILY}: the attention metadata ({type(metadata).__name__}) lacks {missing}; the "
            "plugin's sparse attention reads vLLM's CPU attention metadata, so serve it on the CPU "
            "backend or extend bringup_vllm/glm5.py for this one."
        )
    return metadata


class GlmDecoderLayer(DeepseekDecoderLayer):
    read_config = staticmethod(read_config)
    attention = SparseLatentAttention


class GlmModel(DeepseekModel):
    layer = GlmDecoderLayer


class GlmMoeDsaForCausalLM(DeepseekForCausalLM):
    stack = GlmModel
