import pytest
import torch
from port_configs import reference_config

from bringup_vllm.config_check import Config, UnsupportedConfigError
from bringup_vllm.glm_flash import FAMILY, NotServedError, checked, not_served
from bringup_vllm.kda import KdaMixer, chunked, recurrent

PORT = "glm-5.3-flash"


def test_the_ports_config_is_read():
    checked(Config(reference_config(PORT), FAMILY))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("hidden_act", "gelu"),
        ("attention_bias", True),
        ("num_shared_experts", 1),
        ("moe_layer_freq", 2),
        ("moe_router_activation_func", "sqrtsoftplus"),
        ("rope_scaling", {"type": "yarn", "factor": 4}),
        (
            "linear_attn_config",
            {"kda_layers": [1], "full_attn_layers": [1], "num_heads": 2, "head_dim": 32},
        ),
    ],
)
def test_an_unserved_value_is_refused_by_name(name, value):
    config = reference_config(PORT) | {name: value}
    with pytest.raises(UnsupportedConfigError, match=name):
        checked(Config(config, FAMILY))


def test_vllm_building_the_model_is_refused_saying_why():
    with pytest.raises(NotServedError, match="recurrent state"):
        not_served(Config(reference_config(PORT), FAMILY))


def test_an_unserved_field_is_named_before_the_refusal():
    config = reference_config(PORT) | {"hidden_act": "gelu"}
    with pytest.raises(UnsupportedConfigError, match="hidden_act"):
        not_served(Config(config, FAMILY))


def random_kda_inputs(T: int, H: int = 2, d: int = 8):
    torch.manual_seed(0)
    q = torch.nn.functional.normalize(torch.randn(T, H, d), dim=-1) * d**-0.5
    k = torch.nn.functional.normalize(torch.randn(T, H, d), dim=-1)
    v, g = torch.randn(T, H, d), -torch.rand(T, H, d) * 0.5
    return q, k, v, g, torch.rand(T, H), torch.zeros(H, d, d)


def test_the_chunked_form_equals_the_recurrence():
    # Chunks of 4 over 10 tokens: two whole chunks and a short one.
    inputs = random_kda_inputs(10)
    out_r, s_r = recurrent(*inputs)
    out_c, s_c = chunked(*inputs, chunk=4)
    torch.testing.assert_close(out_c, out_r, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(s_c, s_r, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("chunk", [True, False])
def test_a_sequence_split_in_runs_carries_its_state_and_conv_tails(chunk):
    # Decode after prefill: the state and the three convolutions' tails carry the prefix.
    torch.manual_seed(1)
    mixer = KdaMixer(hidden=16, heads=2, head_dim=8, kernel=4)
    with torch.no_grad():
        for p in mixer.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
        h = torch.randn(9, 16)
        whole, _ = mixer(h, None, chunk)
        first, state = mixer(h[:6], None, chunk)
        parts = [first]
        for t in range(6, 9):
            out, state = mixer(h[t : t + 1], state, chunk)
            parts.append(out)
    torch.testing.assert_close(torch.cat(parts), whole, atol=1e-5, rtol=1e-5)
