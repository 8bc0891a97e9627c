import pytest
import torch
from port_configs import reference_config

from bringup_vllm.config_check import Config, UnsupportedConfigError
from bringup_vllm.minimax import FAMILY, checked, checkpoint_to_parameter


def test_the_ports_config_is_served():
    checked(Config(reference_config("minimax-m3"), FAMILY))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("rope_scaling", {"rope_type": "yarn", "factor": 4}),
        ("use_qk_norm", True),
        ("layer_types", ["sliding_attention"]),
        ("layer_types", ["chunked_attention"] * 4),
        ("num_experts_per_tok", 9),
        ("model_type", "minimax_m2"),
    ],
)
def test_an_unserved_value_is_refused_by_name(name, value):
    config = reference_config("minimax-m3") | {name: value}
    with pytest.raises(UnsupportedConfigError, match=name):
        checked(Config(config, FAMILY))


@pytest.mark.parametrize(
    ("checkpoint", "parameter", "shard"),
    [
        ("model.layers.3.self_attn.k_proj.bias", "model.layers.3.self_attn.qkv_proj.bias", "k"),
        ("model.layers.0.self_attn.sinks", "model.layers.0.self_attn.attention_sink_bias", None),
        (
            "model.layers.1.mlp.experts.gate_up_proj_bias",
            "model.layers.1.mlp.experts.routed_experts.w13_bias",
            None,
        ),
        ("model.layers.1.mlp.router.weight", "model.layers.1.mlp.router.weight", None),
        ("lm_head.weight", "lm_head.weight", None),
    ],
)
def test_checkpoint_names_map_to_vllm_parameters(checkpoint, parameter, shard):
    assert checkpoint_to_parameter(checkpoint) == (parameter, shard)


def test_the_fused_moe_activation_is_gpt_oss_clamped_swiglu_on_interleaved_halves():
    # The engine's clampedSwiglu (src/engine/blocks/mlp/clamped-swiglu-moe.ts) on one row.
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.model_executor.layers.activation import SwigluOAIAndMul

    gate_up = torch.tensor([[9.0, -8.0, -1.0, 0.5]])
    glu = torch.tensor([7.0, -1.0])
    lin = torch.tensor([-7.0, 0.5])
    expected = glu * torch.sigmoid(1.702 * glu) * (lin + 1)
    with set_current_vllm_config(VllmConfig()):
        out = SwigluOAIAndMul(alpha=1.702, limit=7.0).forward_native(gate_up)
    torch.testing.assert_close(out, expected.unsqueeze(0))
