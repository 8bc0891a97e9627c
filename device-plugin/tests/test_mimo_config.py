import json

import pytest
from port_configs import reference_config

from bringup_vllm.config_check import Config, UnsupportedConfigError
from bringup_vllm.mimo import FAMILY, checked


@pytest.mark.parametrize("port", ["mimo-v2.6-flash", "mimo-v2.6-pro"])
def test_the_ports_configs_are_served(port):
    checked(Config(reference_config(port), FAMILY))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("hidden_act", "gelu"),
        ("rope_scaling", {"rope_type": "yarn", "factor": 4}),
        ("scoring_func", "softmax"),
        ("routed_scaling_factor", 2.5),
        ("layer_types", ["full_attention"]),
        ("attention_value_scale", 0.5),
    ],
)
def test_an_unserved_value_is_refused_by_name(name, value):
    config = reference_config("mimo-v2.6-flash") | {name: value}
    with pytest.raises(UnsupportedConfigError, match=name):
        checked(Config(config, FAMILY))


def test_a_missing_window_is_refused():
    config = reference_config("mimo-v2.6-flash")
    del config["sliding_window"]
    with pytest.raises(UnsupportedConfigError, match="sliding_window"):
        checked(Config(config, FAMILY))


def test_config_json_is_read_as_written(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"a": 1, "b": None}))
    from bringup_vllm.config_check import _read

    c = Config(_read(str(tmp_path / "config.json")), FAMILY)
    assert c.get("a") == 1
    assert c.get("b", 7) == 7
    with pytest.raises(UnsupportedConfigError, match="lacks b"):
        c.need("b")
