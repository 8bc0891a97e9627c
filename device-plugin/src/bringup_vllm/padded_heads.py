"""Attention heads padded with zero features to a head size the platform's backend runs.

vLLM's CPU attention runs only some head sizes (32, 64, 80, ... in CPUAttentionBackend), and its
MiMo attention needs a "DiffKV" backend (FlashAttention or Triton, neither on the CPU nor on
vllm-gaudi) when value heads are narrower than key heads. Zero features change nothing: a zero
feature of q and k adds nothing to q.k, and a zero feature of v only fills an output feature
that is dropped. The softmax scale stays 1/sqrt(the real head size), passed explicitly.
"""

import torch
from torch import nn
from vllm.platforms import current_platform


def served_head_size(size: int) -> int:
    """The smallest head size the platform's attention backend runs that holds `size` features."""
    if not current_platform.is_cpu():
        return size
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend

    sizes = sorted(CPUAttentionBackend.get_supported_head_sizes())
    for served in sizes:
        if served >= size:
            return served
    raise ValueError(f"no CPU attention head size holds {size} features (supported: {sizes})")


def pad_heads(x: torch.Tensor, heads: int, size: int, served: int) -> torch.Tensor:
    """[tokens, heads * size] -> [tokens, heads * served], each head's extra features zero."""
    if served == size:
        return x
    tokens = x.shape[0]
    padded = nn.functional.pad(x.reshape(tokens, heads, size), (0, served - size))
    return padded.reshape(tokens, heads * served)


def unpad_heads(x: torch.Tensor, heads: int, size: int, served: int) -> torch.Tensor:
    """[tokens, heads * served] -> [tokens, heads * size]: each head's first `size` features."""
    if served == size:
        return x
    tokens = x.shape[0]
    return x.reshape(tokens, heads, served)[..., :size].reshape(tokens, heads * size)
