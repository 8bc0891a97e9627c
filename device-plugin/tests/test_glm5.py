import pytest
import torch
from port_configs import reference_config

from bringup_vllm.config_check import Config, UnsupportedConfigError
from bringup_vllm.deepseek import rope_theta
from bringup_vllm.glm5 import FAMILY, checked, slots_of


def test_the_ports_config_is_served():
    checked(Config(reference_config("glm-5-mxfp4"), FAMILY))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("index_topk", None),
        ("index_head_dim", None),
        ("indexer_types", ["full", "shared", "full", "shared"]),
        ("rope_interleave", False),
        ("rope_scaling", {"type": "yarn", "factor": 32}),
        ("hidden_act", "gelu"),
        ("rope_parameters", {"rope_type": "yarn", "factor": 4, "rope_theta": 1e6}),
        ("qk_head_dim", 32),
        ("mlp_layer_types", ["dense", "dense", "sparse", "sparse"]),
    ],
)
def test_an_unserved_value_is_refused_by_name(name, value):
    config = reference_config("glm-5-mxfp4") | {name: value}
    with pytest.raises(UnsupportedConfigError, match=name):
        checked(Config(config, FAMILY))


def test_the_rope_base_is_read_in_either_spelling_as_the_engine_reads_it():
    config = reference_config("glm-5-mxfp4")
    assert rope_theta(Config(config, FAMILY)) == 10_000
    with_parameters = config | {"rope_parameters": {"rope_type": "default", "rope_theta": 1e6}}
    checked(Config(with_parameters, FAMILY))
    assert rope_theta(Config(with_parameters, FAMILY)) == 1e6


def test_a_requests_slots_follow_its_block_table():
    slots = slots_of(torch.tensor([7, 2, 5]), 10, 4)
    assert slots.tolist() == [28, 29, 30, 31, 8, 9, 10, 11, 20, 21]
