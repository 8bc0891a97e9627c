"""vLLM's rotary embedding in the convention the ports' checkpoints use.

bringup's engine rotates the first and second half of the rotated features against each other
(HF's "rotate half", src/engine/kernels/rope.ts), which is vLLM's neox style, except in latent
attention, which pairs adjacent features as DeepSeek's and vLLM's code do (GPT-J style). The
`rope-pairing` fault swaps the two, for the wrong-plugin test.
"""

from typing import Any

from vllm.model_executor.layers.rotary_embedding import get_rope

from bringup_vllm import faults


def rotary(
    head_dim: int,
    max_position: int,
    theta: float,
    partial_factor: float = 1.0,
    *,
    adjacent_pairs: bool = False,
) -> Any:
    """RoPE on `head_dim` features; `adjacent_pairs` for latent attention (GPT-J style)."""
    flipped = faults.active("rope-pairing")
    return get_rope(
        head_size=head_dim,
        max_position=max_position,
        is_neox_style=adjacent_pairs == flipped,
        rope_parameters={
            "rope_type": "default",
            "rope_theta": theta,
            "partial_rotary_factor": partial_factor,
        },
    )
