import pytest
import torch

from bringup_vllm.mxfp4 import decoded, dequantize


def e2m1(code: int) -> float:
    """The OCP MX spec's E2M1, from its fields: 1 sign, 2 exponent (bias 1), 1 mantissa bit."""
    sign = -1.0 if code & 8 else 1.0
    exponent = (code >> 1) & 3
    mantissa = code & 1
    if exponent == 0:
        return sign * mantissa * 0.5
    return sign * 2.0 ** (exponent - 1) * (1 + mantissa / 2)


def f32(x: float) -> float:
    """x rounded to float32 (6 x 2^127 overflows to infinity there, as in the decoded tensor)."""
    return torch.tensor(x, dtype=torch.float64).to(torch.float32).item()


def test_every_byte_at_several_scales_decodes_as_the_spec_says():
    blocks = torch.arange(256, dtype=torch.uint8).reshape(16, 16)  # 16 blocks of 16 bytes
    scales = torch.tensor(
        [0, 1, 100, 120, 126, 127, 128, 130, 140, 150, 160, 200, 250, 254, 127, 3]
    )
    out = dequantize(blocks, scales.to(torch.uint8))
    assert out.shape == (512,)
    for block in range(16):
        scale = 2.0 ** (int(scales[block]) - 127)
        for i in range(16):
            byte = block * 16 + i
            low, high = out[block * 32 + 2 * i], out[block * 32 + 2 * i + 1]
            assert low.item() == f32(e2m1(byte & 15) * scale)
            assert high.item() == f32(e2m1(byte >> 4) * scale)


def test_scale_255_is_nan():
    out = dequantize(
        torch.full((1, 16), 0x22, dtype=torch.uint8), torch.tensor([255], dtype=torch.uint8)
    )
    assert torch.isnan(out).all()


def test_pairs_are_joined_and_other_tensors_pass_through():
    blocks = torch.full((2, 1, 16), 0x11, dtype=torch.uint8)
    scales = torch.full((2, 1), 127, dtype=torch.uint8)
    plain = torch.ones(3)
    out = dict(decoded([("e.w_scales", scales), ("n.weight", plain), ("e.w_blocks", blocks)]))
    assert set(out) == {"e.w", "n.weight"}
    assert out["e.w"].shape == (2, 32)
    assert torch.equal(out["e.w"], torch.full((2, 32), 0.5))


def test_a_half_pair_is_refused_by_name():
    with pytest.raises(ValueError, match=r"e\.w"):
        list(decoded([("e.w_blocks", torch.zeros(1, 16, dtype=torch.uint8))]))
