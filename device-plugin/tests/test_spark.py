import pytest
import torch
from port_configs import reference_config

from bringup_vllm.config_check import Config, UnsupportedConfigError
from bringup_vllm.spark import FAMILY, LatentMoe, checked, checkpoint_to_parameter


def spark(**changes: object) -> Config:
    return Config(reference_config("muse-spark-open") | changes, FAMILY)


def test_the_ports_config_is_served():
    checked(spark())


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("model_type", "nemotron_h"),
        ("rope_scaling", {"rope_type": "yarn", "factor": 4}),
        ("mlp_hidden_act", "silu"),
        ("mlp_bias", True),
        ("layer_types", ["sliding_attention"] * 3),
        ("layer_types", ["chunked_attention"] * 4),
        ("sliding_window", None),
        ("num_attention_heads", 3),
        ("swa_num_attention_heads", 3),
        ("n_group", 3),
        ("topk_group", 2),
        ("num_experts_per_tok", 9),
        ("moe_latent_size", None),
    ],
)
def test_an_unserved_value_is_refused_by_name(name, value):
    with pytest.raises(UnsupportedConfigError, match=name):
        checked(spark(**{name: value}))


@pytest.mark.parametrize(
    ("checkpoint", "parameter", "part"),
    [
        ("model.layers.1.self_attn.v_proj.weight", "model.layers.1.self_attn.qkv_proj.weight", "v"),
        ("model.layers.2.mlp.experts.5.up_proj.weight", "model.layers.2.mlp.up", 5),
        ("model.layers.2.mlp.experts.0.down_proj.weight", "model.layers.2.mlp.down", 0),
        ("model.layers.3.mlp.experts.7.output_norm.weight", "model.layers.3.mlp.output_norm", 7),
        ("model.layers.0.mlp.gate.e_score_correction_bias", None, None),
        ("model.layers.0.mlp.shared_experts.up_proj.weight", None, None),
        ("model.layers.0.mlp.fc1_latent_proj.weight", None, None),
    ],
)
def test_checkpoint_names_map_to_parameters(checkpoint, parameter, part):
    assert checkpoint_to_parameter(checkpoint) == (parameter or checkpoint, part)


def filled(moe: LatentMoe) -> dict[str, torch.Tensor]:
    """Random parameters (returned in float64), then what vLLM does after loading them (its CPU
    linear layers repack their weights)."""
    for param in moe.parameters():
        param.data.normal_(0, 0.3)
    drawn = {name: t.detach().double().clone() for name, t in moe.named_parameters()}
    for module in moe.modules():
        if hasattr(module, "quant_method"):
            module.quant_method.process_weights_after_loading(module)
    return drawn


def engine_latent_moe(p: dict[str, torch.Tensor], x: torch.Tensor, c: Config) -> torch.Tensor:
    """The engine's LatentMoe.forward (blocks/mlp/latent-moe.ts, routing.ts), float64, per token."""
    top_k, scale = int(c.need("num_experts_per_tok")), float(c.need("routed_scaling_factor"))
    eps = float(c.need("rms_norm_eps"))
    out = []
    for h in x.double():
        scores = torch.sigmoid(p["gate.weight"] @ h)
        corrected = scores + p["gate.e_score_correction_bias"]
        order = sorted(range(len(scores)), key=lambda e: (-float(corrected[e]), e))[:top_k]
        weights = scores[order] / scores[order].sum() * scale
        latent = p["fc1_latent_proj.weight"] @ h
        mixed = torch.zeros_like(latent)
        for w, e in zip(weights, order, strict=True):
            y = p["down"][e] @ torch.relu(p["up"][e] @ latent).square()
            y = y / torch.sqrt(y.square().mean() + eps) * p["output_norm"][e]
            mixed += w * y
        shared = (
            p["shared_experts.down_proj.weight"]
            @ torch.relu(p["shared_experts.up_proj.weight"] @ h).square()
        )
        out.append(p["fc2_latent_proj.weight"] @ mixed + shared)
    return torch.stack(out)


def test_the_latent_moe_matches_the_engines_definition_in_float64(one_rank):
    from vllm.config import VllmConfig, set_current_vllm_config

    c = spark()
    torch.manual_seed(0)
    with set_current_vllm_config(VllmConfig()):
        moe = LatentMoe(c, prefix="model.layers.0.mlp")
        drawn = filled(moe)
        x = torch.randn(7, int(c.need("hidden_size")))
        out = moe(x)
    torch.testing.assert_close(out.double(), engine_latent_moe(drawn, x, c), rtol=1e-5, atol=1e-5)


def test_scaling_an_experts_down_projection_changes_nothing(one_rank):
    # The norm sits between each expert and the combine (the engine's test pins the same).
    from vllm.config import VllmConfig, set_current_vllm_config

    c = spark()
    torch.manual_seed(1)
    with set_current_vllm_config(VllmConfig()):
        moe = LatentMoe(c, prefix="model.layers.0.mlp")
        filled(moe)
        x = torch.randn(5, int(c.need("hidden_size")))
        before = moe(x)
        moe.down.data[3] *= 7.0
        torch.testing.assert_close(moe(x), before, rtol=1e-5, atol=1e-5)
