"""GLM-5.3-Flash's plain-PyTorch blocks against bringup's engine, layer output by layer output.

vLLM does not serve this port (glm_flash.py says why), so each block runs here on the engine's
own input to it over the tiny checkpoint, a 100-token prompt (more than one 64-token KDA chunk)
and 4 decode steps, and its output must match the engine's within TOLERANCE in float32.
"""

import pytest
import torch
from blocks import BlockResult, check_blocks, engine_dump, report, write_report

from bringup_vllm.glm_flash import GlmFlashReference

PORT = "glm-5.3-flash"
# float32 blocks against the engine's (float64 inside its kernels, float32 between blocks): the
# streams reach about 10, where a float32 ulp is 1e-6; measured differences are up to 3e-6.
TOLERANCE = 1e-5


def run_blocks(chunk: bool) -> list[BlockResult]:
    dump = engine_dump(PORT)
    model = GlmFlashReference.from_checkpoint(dump.config, dump.weights())

    def block(site: str):
        _, index, part = site.split(".")
        layer = model.layers()[int(index)]
        if part == "ffn":
            return layer.ffn_block
        if not layer.kda:
            # Causal attention over every row: each decode row sees the prefix, as with a cache.
            return lambda streams: layer.mixer_block(streams, None, chunk)[0]

        def kda(streams: torch.Tensor) -> torch.Tensor:
            # The prefill, then each decode token from the state and conv tails the run left.
            out, state = layer.mixer_block(streams[: dump.prefill], None, chunk)
            rows = [out]
            for t in range(dump.prefill, streams.shape[0]):
                step, state = layer.mixer_block(streams[t : t + 1], state, chunk)
                rows.append(step)
            return torch.cat(rows)

        return kda

    with torch.no_grad():
        return check_blocks(dump, model.embed, block, model.head, TOLERANCE)


@pytest.mark.parametrize("chunk", [True, False], ids=["chunked", "recurrent"])
def test_every_block_matches_the_engine(chunk):
    results = run_blocks(chunk)
    variant = "chunked" if chunk else "recurrent"
    print(f"\n{PORT} ({variant} KDA prefill):\n{report(results)}")
    write_report(engine_dump(PORT), variant, results)
    assert len(results) == 2 + 2 * engine_dump(PORT).num_layers
    assert all(r.passed for r in results), report(results)


def test_a_flipped_gate_sign_fails_the_check(monkeypatch):
    monkeypatch.setenv("BRINGUP_VLLM_FAULT", "kda-gate-sign")
    results = run_blocks(chunk=True)
    failed = [r.site for r in results if not r.passed]
    # Every KDA mixer fails (1-based in the config); each other block takes the engine's own input
    # to it and still passes.
    kda = engine_dump(PORT).config["linear_attn_config"]["kda_layers"]
    assert failed == [f"layers.{n - 1}.mixer" for n in kda], report(results)
    print(f"\n{PORT} with kda-gate-sign:\n{report(results)}")


def test_the_whole_stack_matches_the_engines_logits():
    # Not block by block: the plugin's own stream through every layer, errors piling up.
    dump = engine_dump(PORT)
    model = GlmFlashReference.from_checkpoint(dump.config, dump.weights())
    with torch.no_grad():
        logits = model(dump.input_ids)
    diff = (logits - dump.tensors["logits"]).abs().max().item()
    print(f"\n{PORT} whole stack: logits max|Δ| {diff:.3e}")
    assert diff <= TOLERANCE
