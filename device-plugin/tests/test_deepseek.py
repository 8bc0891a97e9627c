import pytest
import torch
from port_configs import reference_config

from bringup_vllm.config_check import Config, UnsupportedConfigError
from bringup_vllm.deepseek import FAMILY, checked


def test_the_ports_config_is_served():
    checked(Config(reference_config("kimi-k2.7-code"), FAMILY))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("rope_scaling", {"type": "yarn", "factor": 32}),
        ("scoring_func", "softmax"),
        ("topk_method", "greedy"),
        ("index_topk", 2048),
        ("q_lora_rank", None),
        ("hidden_act", "gelu"),
    ],
)
def test_an_unserved_value_is_refused_by_name(name, value):
    config = reference_config("kimi-k2.7-code") | {name: value}
    with pytest.raises(UnsupportedConfigError, match=name):
        checked(Config(config, FAMILY))


def test_the_rotary_the_plugin_calls_rotates_adjacent_pairs_exactly():
    # deepseek.py passes [tokens, heads * features]; pair (2i, 2i+1) turns by pos * theta^(-2i/d).
    from vllm.config import VllmConfig, set_current_vllm_config

    from bringup_vllm.rope import rotary

    tokens, heads, size = 5, 4, 8
    torch.manual_seed(0)
    q, k = torch.randn(tokens, heads, size), torch.randn(tokens, 1, size)
    positions = torch.arange(tokens)
    with set_current_vllm_config(VllmConfig()):
        rope = rotary(size, 64, 50_000.0, adjacent_pairs=True)
        q_out, _ = rope.forward_cpu(
            positions, q.reshape(tokens, -1).clone(), k.reshape(tokens, -1).clone()
        )
    angle = positions[:, None].double() / 50_000.0 ** (torch.arange(0, size, 2).double() / size)
    cos, sin = angle.cos()[:, None].float(), angle.sin()[:, None].float()
    even, odd = q[..., 0::2], q[..., 1::2]
    expected = torch.stack([even * cos - odd * sin, even * sin + odd * cos], -1).flatten(-2)
    torch.testing.assert_close(q_out.view(tokens, heads, size), expected)
