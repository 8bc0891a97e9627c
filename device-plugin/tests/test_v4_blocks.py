"""DeepSeek-V4's plain-PyTorch blocks against bringup's engine, layer output by layer output.

vLLM does not serve this port (v4.py says why), so each block runs on the engine's own input to it
over the tiny checkpoint, a 100-token prompt (past the 32-key window, 25 compressed sparse rows
so the indexer's top 16 is a real choice, and 3 heavily compressed rows) and 4 decode steps, and
its output must match the engine's within TOLERANCE in float32. The engine prefilled in 32-row
steps; the dump joins them. The mixers run both ways: the prompt and decode rows as one sequence
at once, and as the engine ran them (the prompt, then each decode token through the cache).
"""

import math
from pathlib import Path

import pytest
import torch
from blocks import BlockResult, EngineDump, check_blocks, engine_dump, report, write_report
from port_configs import reference_config
from safetensors.torch import load_file

from bringup_vllm.config_check import Config, UnsupportedConfigError
from bringup_vllm.v4 import FAMILY, V4Reference, checked, frequencies, layer_specs, rotate

PORT = "deepseek-v4.1-flash"
# float32 blocks against the engine's (float64 inside its kernels, float32 between blocks).
TOLERANCE = 1e-5


def v4(**changes: object) -> Config:
    return Config(reference_config(PORT) | changes, FAMILY)


def reference(dump: EngineDump) -> V4Reference:
    """The checkpoint's tensors as stored (MXFP4 blocks, the hash tables' integers)."""
    tensors: dict[str, torch.Tensor] = {}
    for path in sorted(Path(dump.model_dir).glob("*.safetensors")):
        tensors.update(load_file(path))
    return V4Reference.from_checkpoint(dump.config, tensors.items())


def run_blocks(steps: bool = False) -> list[BlockResult]:
    """Each block on the engine's input to it; `steps`: the mixers as the engine ran them (the
    prompt at once, then each decode token through the cache), else the whole sequence at once."""
    dump = engine_dump(PORT)
    model = reference(dump)

    def block(site: str):
        _, index, part = site.split(".")
        if part == "mixer":
            layer = int(index)
            return model.mixer_in_steps(layer, dump.prefill) if steps else model.mixer_block(layer)
        return model.ffn_block(int(index), dump.input_ids)

    with torch.no_grad():
        return check_blocks(dump, model.embed, block, model.head, TOLERANCE)


def test_the_ports_config_is_read():
    kinds = [s.kind for s in layer_specs(checked(v4()))]
    assert kinds == ["sliding", "csa", "hca", "csa"]
    assert [s.hash_routed for s in layer_specs(v4())] == [True, False, False, False]


def test_the_legacy_ratios_read_as_the_layer_types():
    legacy = v4(layer_types=None, compress_ratios=[0, 4, 32, 4, 0])
    assert [s.kind for s in layer_specs(legacy)] == ["sliding", "csa", "hca", "csa"]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("model_type", "deepseek_v3"),
        ("num_key_value_heads", 2),
        ("n_shared_experts", 2),
        ("scoring_func", "sigmoid"),
        ("rope_scaling", {"type": "linear", "factor": 4}),
        ("rope_scaling", {"type": "yarn"}),
        ("rope_parameters", {"main": {"rope_type": "default"}}),
        ("o_groups", 3),
        ("num_experts_per_tok", 9),
        ("layer_types", ["sliding_attention"]),
        ("index_topk", None),
    ],
)
def test_an_unserved_value_is_refused_by_name(name, value):
    with pytest.raises(UnsupportedConfigError, match=name):
        layer_specs(checked(v4(**{name: value})))


def test_the_inverse_rotation_undoes_the_rotation():
    torch.manual_seed(0)
    x, pos = torch.randn(7, 3, 8), torch.arange(7) * 5
    freq = frequencies(8, 10_000.0)
    back = rotate(rotate(x, pos, freq), pos, freq, inverse=True)
    torch.testing.assert_close(back, x)
    # Pair (0, 1) at position 1 turns by one radian at the lowest frequency.
    one = rotate(torch.tensor([[1.0, 0.0]]), torch.tensor([1]), frequencies(2, 10_000.0))
    torch.testing.assert_close(one, torch.tensor([[math.cos(1.0), math.sin(1.0)]]))


def test_the_compressed_layers_yarn_is_transformers():
    # transformers' own DeepSeek-V4 rotary embedding, an independent reading of the same config:
    # YaRN on the compressed layers only, attention factor forced to 1.
    from transformers.models.deepseek_v4.configuration_deepseek_v4 import DeepseekV4Config
    from transformers.models.deepseek_v4.modeling_deepseek_v4 import DeepseekV4RotaryEmbedding

    yarn = {"type": "yarn", "factor": 16, "original_max_position_embeddings": 512}
    hf = DeepseekV4RotaryEmbedding(
        DeepseekV4Config(**(reference_config(PORT) | {"rope_scaling": yarn}))
    )
    specs = layer_specs(v4(rope_scaling=yarn))
    assert hf.compress_attention_scaling == 1.0
    torch.testing.assert_close(specs[1].freq.float(), hf.compress_inv_freq)
    torch.testing.assert_close(specs[0].freq.float(), hf.main_inv_freq)
    assert not torch.equal(specs[1].freq, layer_specs(v4())[1].freq)


@pytest.mark.parametrize("steps", [False, True], ids=["whole-sequence", "prefill-then-decode"])
def test_every_block_matches_the_engine(steps):
    results = run_blocks(steps)
    dump = engine_dump(PORT)
    variant = "prefill-then-decode" if steps else "whole-sequence"
    print(f"\n{PORT} ({variant}):\n{report(results)}")
    write_report(dump, variant, results)
    assert len(results) == 2 + 2 * dump.num_layers
    assert all(r.passed for r in results), report(results)


def test_a_flipped_rope_pairing_fails_the_check(monkeypatch):
    monkeypatch.setenv("BRINGUP_VLLM_FAULT", "rope-pairing")
    results = run_blocks()
    failed = [r.site for r in results if not r.passed]
    # Every attention rotates (queries, keys, compressed rows, the output back); each other block
    # takes the engine's own input to it and still passes.
    dump = engine_dump(PORT)
    assert failed == [f"layers.{n}.mixer" for n in range(dump.num_layers)], report(results)
    print(f"\n{PORT} with rope-pairing:\n{report(results)}")


def test_the_indexers_choice_is_checked():
    # Attending every closed compressed row instead of the indexer's top 16 must show: the
    # compressed sparse layers' mixers differ from the engine, the other layers do not.
    dump = engine_dump(PORT)
    model = reference(dump)
    everything = V4Reference(v4(index_topk=dump.input_ids.shape[0]), model.w)
    specs = layer_specs(v4())
    with torch.no_grad():
        for layer, spec in enumerate(specs):
            before = (
                dump.tensors[f"layers.{layer - 1}.ffn"] if layer else model.embed(dump.input_ids)
            )
            diff = everything.mixer_block(layer)(before) - dump.tensors[f"layers.{layer}.mixer"]
            assert (diff.abs().max().item() > TOLERANCE) == (spec.kind == "csa"), layer


def test_the_hash_routing_is_checked():
    # Routing the first layer by top-k as the others (its table ignored) must show at its experts
    # alone: the block check sees which experts tid2eid gives each token.
    dump = engine_dump(PORT)
    model = reference(dump)
    weights = {k: v for k, v in model.w.items() if not k.endswith(".gate.tid2eid")}
    weights["model.layers.0.mlp.gate.e_score_correction_bias"] = torch.zeros(model.experts)
    top_k = V4Reference(v4(num_hash_layers=0), weights)
    with torch.no_grad():
        for layer in range(model.num_layers):
            before, site = dump.tensors[f"layers.{layer}.mixer"], f"layers.{layer}.ffn"
            diff = (top_k.ffn_block(layer, dump.input_ids)(before) - dump.tensors[site]).abs()
            assert (diff.max().item() > TOLERANCE) == (layer == 0), layer


def test_chunks_through_the_cache_give_the_whole_sequences_attention():
    # Any split of the rows, each chunk reading the cache the ones before it left, computes what
    # the whole sequence at once does; the cache keeps the window's keys and only the open
    # windows' projections (the compressed rows grow, one per ratio positions).
    dump = engine_dump(PORT)
    model = reference(dump)
    x = torch.randn(
        dump.input_ids.shape[0], model.hidden, generator=torch.Generator().manual_seed(0)
    )
    with torch.no_grad():
        for layer, spec in enumerate(model.specs):
            whole, _ = model.attention(layer, x)
            cache, rows = None, []
            for chunk in x.split([37, 1, 1, 30, 35]):
                out, cache = model.attention(layer, chunk, cache)
                rows.append(out)
                assert cache.keys.shape[0] <= model.window
                if cache.pending is not None:
                    assert cache.pending.c.shape[0] < 2 * spec.ratio
            torch.testing.assert_close(torch.cat(rows), whole, rtol=0, atol=1e-6)


def test_the_whole_stack_matches_the_engines_logits():
    # Not block by block: the plugin's own stream through every layer, errors piling up.
    dump = engine_dump(PORT)
    model = reference(dump)
    with torch.no_grad():
        stream = model.embed(dump.input_ids)
        for layer in range(model.num_layers):
            stream = model.mixer_block(layer)(stream)
            stream = model.ffn_block(layer, dump.input_ids)(stream)
        diff = (model.head(stream) - dump.tensors["logits"]).abs().max().item()
    print(f"\n{PORT} whole stack: logits max|Δ| {diff:.3e}")
    assert diff <= TOLERANCE
