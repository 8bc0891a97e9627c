"""vLLM's rotary embedding in the convention the ports' checkpoints use.

bringup's engine rotates the first and second half of the rotated features against each other
(HF's "rotate half", src/engine/kernels/rope.ts), which is vLLM's neox style. The
`rope-pairing` fault pairs adjacent features instead (GPT-J style), for the wrong-plugin test.
"""

from typing import Any

from vllm.model_executor.layers.rotary_embedding import get_rope

from bringup_vllm import faults


def rotary(head_dim: int, max_position: int, theta: float, partial_factor: float = 1.0) -> Any:
    return get_rope(
        head_size=head_dim,
        max_position=max_position,
        is_neox_style=not faults.active("rope-pairing"),
        rope_parameters={
            "rope_type": "default",
            "rope_theta": theta,
            "partial_rotary_factor": partial_factor,
        },
    )
