"""MXFP4 weights (OCP Microscaling) decoded to float32 as the checkpoint is read, in plain PyTorch.

The ports' checkpoints store an MXFP4 weight W [..., R, C] as `W_blocks` u8 [..., R, C/32, 16]
(32 E2M1 elements a block, element 2i in the low nibble and 2i+1 in the high one) and
`W_scales` u8 [..., R, C/32] (E8M0: 2^(s - 127), 255 is NaN), as bringup's formats/mxfp4.ts and
the public MXFP4 checkpoints do. The CPU backend has no MXFP4 MoE kernel for per-expert tensors
without a quantization_config, so the plugin decodes them exactly (every E2M1 value times a power
of two is a float32) and vLLM's fused MoE runs the decoded weights, as the engine's reference
path computes with the decoded values.
"""

from collections.abc import Iterable, Iterator

import torch

# E2M1 codes 0-7; bit 3 is the sign.
_E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float32)
_VALUES = torch.cat([_E2M1, -_E2M1])
_BLOCK_BYTES = 16


def dequantize(blocks: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """[..., groups, 16] u8 blocks and [..., groups] u8 scales -> [..., groups * 32] float32."""
    if blocks.dtype != torch.uint8 or scales.dtype != torch.uint8:
        raise ValueError(
            f"MXFP4 blocks and scales must be uint8, got {blocks.dtype}, {scales.dtype}"
        )
    if blocks.shape[-1] != _BLOCK_BYTES or blocks.shape[:-1] != scales.shape:
        raise ValueError(
            f"MXFP4 blocks {list(blocks.shape)} do not match scales {list(scales.shape)}: "
            "blocks are [..., groups, 16] and scales [..., groups]"
        )
    low = (blocks & 0x0F).long()
    high = (blocks >> 4).long()
    codes = torch.stack([low, high], dim=-1).flatten(-2)  # [..., groups, 32]
    exponent = scales.to(torch.float32) - 127.0
    scale = torch.where(scales == 255, torch.nan, torch.exp2(exponent))
    values = _VALUES[codes] * scale.unsqueeze(-1)
    return values.flatten(-2)


def decoded(weights: Iterable[tuple[str, torch.Tensor]]) -> Iterator[tuple[str, torch.Tensor]]:
    """The checkpoint's tensors with each `X_blocks` + `X_scales` pair replaced by float32 `X`."""
    pending: dict[str, dict[str, torch.Tensor]] = {}
    for name, tensor in weights:
        for part in ("blocks", "scales"):
            if name.endswith(f"_{part}"):
                base = name[: -len(part) - 1]
                pair = pending.setdefault(base, {})
                pair[part] = tensor
                if len(pair) == 2:
                    del pending[base]
                    yield base, dequantize(pair["blocks"], pair["scales"])
                break
        else:
            yield name, tensor
    if pending:
        raise ValueError(f"MXFP4 weights without their other half: {sorted(pending)}")
