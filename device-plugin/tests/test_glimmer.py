import pytest
from port_configs import reference_config

from bringup_vllm.config_check import Config, UnsupportedConfigError
from bringup_vllm.glimmer import (
    FAMILY,
    checked,
    checkpoint_name,
    is_moe_layer,
    layer_windows,
)


def glimmer(**changes: object) -> Config:
    return Config(reference_config("muse-glimmer-30b") | changes, FAMILY)


def test_the_ports_config_is_served():
    checked(glimmer())


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("model_type", "qwen3_moe"),
        ("hidden_act", "gelu"),
        ("rope_scaling", {"rope_type": "yarn", "factor": 4}),
        ("scoring_func", "sigmoid"),
        ("routed_scaling_factor", 2.5),
        ("use_sliding_window", True),
        ("layer_types", ["full_attention"] * 4),
        ("num_experts", 8),
        ("num_experts_per_tok", 2),
        ("moe_top_k", 9),
        ("sliding_window_pattern", 0),
        ("sliding_window_pattern", 1.5),
        ("num_key_value_heads", 3),
    ],
)
def test_an_unserved_value_is_refused_by_name(name, value):
    with pytest.raises(UnsupportedConfigError, match=name):
        checked(glimmer(**{name: value}))


def test_a_pattern_without_a_window_is_refused_by_name():
    with pytest.raises(UnsupportedConfigError, match="sliding_window"):
        checked(glimmer(sliding_window=None))


def test_patch_3_makes_every_nth_layer_full_as_the_engine_does():
    # src/engine/models/muse-glimmer.ts SLIDING_PATTERN: layer i is full when (i + 1) % N == 0.
    assert layer_windows(glimmer()) == [128, None, 128, None]
    assert layer_windows(glimmer(sliding_window_pattern=3, num_hidden_layers=6)) == [
        128,
        128,
        None,
        128,
        128,
        None,
    ]
    assert layer_windows(glimmer(sliding_window_pattern=None)) == [None] * 4


def test_patch_1_gives_vllm_qwen3_moe_expert_fields_through_autoconfig(tmp_path):
    import json

    from transformers import AutoConfig

    import bringup_vllm

    bringup_vllm.register()
    (tmp_path / "config.json").write_text(json.dumps(reference_config("muse-glimmer-30b")))
    hf = AutoConfig.from_pretrained(tmp_path)
    assert (hf.num_experts, hf.num_experts_per_tok, hf.norm_topk_prob) == (8, 2, True)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "muse_glimmer"}))
    assert AutoConfig.from_pretrained(tmp_path).norm_topk_prob is False


def test_patch_2_renames_only_the_router():
    assert checkpoint_name("model.layers.2.mlp.router.weight") == "model.layers.2.mlp.gate.weight"
    for name in (
        "model.layers.2.mlp.experts.3.gate_proj.weight",
        "model.layers.2.mlp.gate_proj.weight",
        "model.layers.0.self_attn.q_norm.weight",
    ):
        assert checkpoint_name(name) == name


def test_dense_layers_follow_qwen3_moe_rule():
    config = glimmer(mlp_only_layers=[0], decoder_sparse_step=2)
    assert [is_moe_layer(config, i) for i in range(4)] == [False, True, False, True]


def test_vllm_reads_the_ports_config_class_not_its_own_muse_glimmer(tmp_path):
    # vLLM 0.32 ships a different model under `muse_glimmer` and prefers its own config registry.
    import json

    from vllm.transformers_utils.config import get_config

    import bringup_vllm
    from bringup_vllm.configs import MuseGlimmerConfig

    bringup_vllm.register()
    (tmp_path / "config.json").write_text(json.dumps(reference_config("muse-glimmer-30b")))
    config = get_config(tmp_path, trust_remote_code=False)
    assert isinstance(config, MuseGlimmerConfig)
    assert (config.num_experts, config.hidden_size) == (8, 64)
