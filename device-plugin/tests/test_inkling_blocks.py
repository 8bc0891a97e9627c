"""Inkling's plain-PyTorch blocks against bringup's engine, layer output by layer output.

vLLM does not serve this port (inkling.py says why), so each block runs on the engine's own input
to it over the tiny checkpoint, a 100-token prompt (past the 16 buckets' exact distances) and the
engine's decode steps, and its output must match the engine's within TOLERANCE in float32. The
blocks take the prompt and decode rows as one sequence: each decode row attends to every earlier
row and continues the convolutions from the rows before it, as the engine's cache and tails do.
"""

import pytest
import torch
from blocks import check_blocks, engine_dump, report, write_report
from port_configs import reference_config

from bringup_vllm.config_check import Config, UnsupportedConfigError
from bringup_vllm.inkling import (
    FAMILY,
    InklingReference,
    causal_conv,
    checked,
    relative_buckets,
)

PORT = "inkling-small"
# float32 blocks against the engine's (float32 between blocks, float64 in places inside them).
TOLERANCE = 1e-5


def inkling(**changes: object) -> Config:
    return Config(reference_config(PORT) | changes, FAMILY)


def test_the_ports_config_is_read():
    checked(inkling())


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("model_type", "t5"),
        ("n_shared_experts", 1),
        ("rope_theta", 10_000),
        ("rope_scaling", {"rope_type": "yarn"}),
        ("num_attention_heads", 3),
        ("relative_attention_max_distance", 8),
        ("relative_attention_max_distance", 1_000_000),
        ("num_experts_per_tok", 5),
        ("sconv_kernel_size", None),
    ],
)
def test_an_unserved_value_is_refused_by_name(name, value):
    with pytest.raises(UnsupportedConfigError, match=name):
        checked(inkling(**{name: value}))


def test_the_buckets_are_t5s_causal_buckets():
    # HF T5Attention._relative_position_bucket(-d, bidirectional=False, 16, 64), transcribed in
    # float64 but truncated as its float32 tensor math truncates for these distances.
    import math

    d = torch.arange(0, 200)
    expected = [
        n if n < 8 else min(15, 8 + int(math.log(n / 8) / math.log(64 / 8) * 8)) for n in range(200)
    ]
    assert relative_buckets(d, 16, 64).tolist() == expected


def test_a_prefill_split_anywhere_carries_the_convolution_tails():
    torch.manual_seed(0)
    x, weight = torch.randn(11, 6), torch.randn(6, 1, 4)
    whole, _ = causal_conv(x, weight, torch.zeros(6, 3))
    first, tail = causal_conv(x[:5], weight, torch.zeros(6, 3))
    second, _ = causal_conv(x[5:], weight, tail)
    torch.testing.assert_close(torch.cat([first, second]), whole)
    # Row t is sum_j w[j] * x[t - 3 + j] (the engine's blocks/conv/short-conv.ts, zeros before 0).
    padded = torch.cat([torch.zeros(3, 6), x])
    rows = [sum(weight[:, 0, j] * padded[t + j] for j in range(4)) for t in range(11)]
    torch.testing.assert_close(whole, torch.stack(rows))


def test_every_block_matches_the_engine():
    dump = engine_dump(PORT)
    model = InklingReference.from_checkpoint(dump.config, dump.weights())

    def block(site: str):
        _, index, part = site.split(".")
        return (model.mixer_block if part == "mixer" else model.ffn_block)(int(index))

    with torch.no_grad():
        results = check_blocks(dump, model.embed, block, model.head, TOLERANCE)
    print(f"\n{PORT}:\n{report(results)}")
    write_report(dump, "prefill-and-decode", results)
    assert len(results) == 2 + 2 * dump.num_layers
    assert all(r.passed for r in results), report(results)


def test_the_whole_stack_matches_the_engines_logits():
    dump = engine_dump(PORT)
    model = InklingReference.from_checkpoint(dump.config, dump.weights())
    with torch.no_grad():
        stream = model.embed(dump.input_ids)
        for layer in range(model.num_layers):
            stream = model.ffn_block(layer)(model.mixer_block(layer)(stream))
        diff = (model.head(stream) - dump.tensors["logits"]).abs().max().item()
    print(f"\n{PORT} whole stack: logits max|Δ| {diff:.3e}")
    assert diff <= TOLERANCE
