import tempfile
from pathlib import Path

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


@pytest.fixture(scope="module")
def attention(one_rank):
    """One GLM-5 layer's SparseLatentAttention as vLLM builds it for the port's tiny config."""
    import json
    import os

    from vllm.config import CacheConfig, ModelConfig, VllmConfig, set_current_vllm_config

    from bringup_vllm.glm5 import SparseLatentAttention

    os.environ["VLLM_MLA_DISABLE"] = "1"
    config = reference_config("glm-5-mxfp4") | {"architectures": ["GlmMoeDsaForCausalLM"]}
    directory = Path(tempfile.mkdtemp())
    (directory / "config.json").write_text(json.dumps(config))
    vllm_config = VllmConfig(
        model_config=ModelConfig(model=str(directory), dtype="float32", max_model_len=4096),
        cache_config=CacheConfig(block_size=32),
    )
    with set_current_vllm_config(vllm_config):
        layer = SparseLatentAttention(
            vllm_config, checked(Config(config, FAMILY)), prefix="model.layers.1.self_attn"
        )
    generator = torch.Generator().manual_seed(0)
    for parameter in layer.parameters():
        parameter.data = torch.randn(parameter.shape, generator=generator) * 0.3
    # As vLLM's loader does once the weights are in (the CPU linear layers pick their kernel).
    for module in layer.modules():
        method = getattr(module, "quant_method", None)
        if method is not None and hasattr(method, "process_weights_after_loading"):
            method.process_weights_after_loading(module)
    return layer


def test_batched_chunked_and_decode_steps_read_the_same_rows_as_one_pass(attention):
    # Two requests past index_topk (256) on shuffled blocks of 32: step 1 prefills A's first 200
    # tokens and all but the last of B's; step 2 prefills the rest of A and decodes B's last.
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionMetadata

    lengths = {"A": 300, "B": 281}
    tables = {"A": torch.tensor([9, 3, 0, 7, 12, 5, 1, 14, 2, 8]), "B": torch.arange(15, 24)}
    generator = torch.Generator().manual_seed(1)
    whole, expected = {}, {}
    for name, length in lengths.items():
        positions = torch.arange(length)
        hidden = torch.randn(length, 64, generator=generator)
        q, k, v, q_latent = attention.project(positions, hidden)
        rows = (q, k, v, *attention.indexer.project(hidden, q_latent, positions), positions)
        whole[name] = rows
        expected[name] = attention.attend(*rows[:6], positions)
    steps = [{"A": (0, 200), "B": (0, 280)}, {"A": (200, 300), "B": (280, 281)}]
    for step in steps:
        batch = [tuple(whole[n][i][a:b] for i in range(7)) for n, (a, b) in step.items()]
        q, k, v, iq, iw, ik, positions = (torch.cat(parts) for parts in zip(*batch, strict=True))
        counts = [b - a for a, b in step.values()]
        slots = torch.cat([slots_of(tables[n], b, 32)[a:] for n, (a, b) in step.items()])
        metadata = CPUAttentionMetadata(
            num_actual_tokens=len(positions),
            max_query_len=max(counts),
            query_start_loc=torch.tensor([0, counts[0], sum(counts)]),
            max_seq_len=max(b for _, b in step.values()),
            seq_lens=torch.tensor([b for _, b in step.values()]),
            block_table=torch.stack([tables["A"], torch.cat([tables["B"], torch.tensor([0])])]),
            slot_mapping=slots,
            scheduler_metadata=None,
        )
        out = torch.zeros(len(positions), attention.heads, attention.value)
        attention.attend_cached(metadata, positions, q, k, v, iq, iw, ik, out)
        first = 0
        for n, (a, b) in step.items():
            torch.testing.assert_close(out[first : first + b - a], expected[n][a:b])
            first += b - a
