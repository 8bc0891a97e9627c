import importlib.metadata

from vllm import ModelRegistry

import bringup_vllm
from bringup_vllm.families import ARCHITECTURES


def test_the_entry_point_names_register():
    points = importlib.metadata.entry_points(group="vllm.general_plugins")
    assert [p.value for p in points if p.name == "bringup"] == ["bringup_vllm:register"]


def test_register_is_lazy_and_safe_to_call_twice():
    bringup_vllm.register()
    first = {a: ModelRegistry.models[a] for a in ARCHITECTURES}
    bringup_vllm.register()
    for architecture, target in ARCHITECTURES.items():
        model = ModelRegistry.models[architecture]
        assert f"{model.module_name}:{model.class_name}" == target
        assert model == first[architecture]
    assert "MiMoV2FlashForCausalLM" in ModelRegistry.get_supported_archs()


def test_every_target_imports():
    import importlib

    for target in ARCHITECTURES.values():
        module, name = target.split(":")
        assert isinstance(getattr(importlib.import_module(module), name), type)


def test_model_types_transformers_lacks_read_through_autoconfig(tmp_path):
    import json

    from transformers import AutoConfig

    bringup_vllm.register()
    (tmp_path / "config.json").write_text(
        json.dumps(
            {"model_type": "minimax_m3", "hidden_size": 64, "layer_types": ["full_attention"]}
        )
    )
    config = AutoConfig.from_pretrained(tmp_path)
    assert config.hidden_size == 64
    assert config.layer_types == ["full_attention"]
