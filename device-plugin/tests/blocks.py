"""Block-by-block checks: the plugin's plain-PyTorch layers against bringup's reference engine.

Where vLLM's CPU backend cannot serve a port (a per-sequence recurrent state, for one), its
layers are still held to the engine, one at a time, on the port's tiny checkpoint. The engine
dumps what it computed over a fixed prompt (`bringup device blocks <port> --out FILE`,
src/flow/device-blocks.ts): the embeddings, the residual stream after each layer's mixer and after
its feed-forward part, and the logits, over a prefill and then a few decode steps of one token. Each
block here runs on the engine's own input to it (a block with a per-sequence state carries it from
the prefill rows into each decode row, as the engine did), so an
error shows at the block that makes it instead of piling up along the stack, and its output is
compared with the engine's: the largest absolute difference, against a stated tolerance.

The checkpoint is the directory the engine ran (the dump's metadata names it): the same
config.json and the same tensor names.
"""

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file

ROOT = Path(__file__).resolve().parents[2]
DUMPS = ROOT / ".cache" / "device-blocks"
FORMAT = "bringup-device-blocks/1"


def bringup_command() -> list[str]:
    """The bringup CLI of this checkout: the built one (npm ci builds it), else its source (tsx)."""
    built = ROOT / "dist" / "src" / "cli" / "main.js"
    node = shutil.which("node") or "node"
    if built.exists():
        return [node, str(built)]
    return [str(ROOT / "node_modules" / ".bin" / "tsx"), str(ROOT / "src" / "cli" / "main.ts")]


@dataclass(frozen=True)
class EngineDump:
    """What the reference engine computed over the prompt, and the checkpoint it ran."""

    port: str
    model_dir: Path
    config: dict[str, Any]
    streams: int
    # Rows [0, prefill) were the prefill (one engine step or several, joined in order); each row
    # after it a decode step of one token.
    prefill: int
    tensors: dict[str, torch.Tensor]

    @property
    def input_ids(self) -> torch.Tensor:
        return self.tensors["input_ids"].long()

    @property
    def num_layers(self) -> int:
        return int(self.config["num_hidden_layers"])

    def weights(self) -> dict[str, torch.Tensor]:
        """Every tensor of the checkpoint by its name, as float32."""
        out: dict[str, torch.Tensor] = {}
        for path in sorted(self.model_dir.glob("*.safetensors")):
            out.update({k: v.float() for k, v in load_file(path).items()})
        return out


@cache
def engine_dump(port: str) -> EngineDump:
    """Runs `bringup device blocks <port>` (once per test session) and reads what it wrote."""
    out = DUMPS / f"{port}.safetensors"
    env = {**os.environ, "NODE_NO_WARNINGS": "1"}
    run = subprocess.run(
        [*bringup_command(), "device", "blocks", port, "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        raise RuntimeError(f"bringup device blocks {port} failed ({run.returncode}): {run.stderr}")
    with safe_open(str(out), framework="pt") as f:
        metadata = f.metadata()
        tensors = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118
    if metadata.get("format") != FORMAT:
        raise ValueError(f"{out}: format {metadata.get('format')!r}, expected {FORMAT!r}")
    model_dir = Path(metadata["model_dir"])
    config = json.loads((model_dir / "config.json").read_text())
    streams, prefill = int(metadata["streams"]), int(metadata["prefill"])
    return EngineDump(port, model_dir, config, streams, prefill, tensors)


def engine_sites(dump: EngineDump) -> Iterator[tuple[str, str]]:
    """Each block's (input site, output site) in order: layer L's mixer, then its feed-forward."""
    previous = "stream"
    for layer in range(dump.num_layers):
        for part in ("mixer", "ffn"):
            site = f"layers.{layer}.{part}"
            yield previous, site
            previous = site


@dataclass(frozen=True)
class BlockResult:
    site: str
    max_abs_diff: float
    max_abs_value: float
    tolerance: float

    @property
    def passed(self) -> bool:
        return self.max_abs_diff <= self.tolerance


# A block runs on the engine's input to it and returns its output (both float32 tensors).
Block = Callable[[torch.Tensor], torch.Tensor]


def check_blocks(
    dump: EngineDump,
    embed: Callable[[torch.Tensor], torch.Tensor],
    blocks: Callable[[str], Block],
    head: Block,
    tolerance: float,
) -> list[BlockResult]:
    """Every block of the stack on the engine's input to it, compared with the engine's output.

    `embed` maps the prompt's token ids to the residual stream [T, streams * hidden] (its output is
    compared with the engine's embeddings, repeated per stream); `blocks(site)` is the block whose
    output the engine recorded at `site` (`layers.L.mixer`, `layers.L.ffn`), given the stream the
    engine had before it; `head` maps the engine's last stream to logits. Returns each site's
    largest |plugin - engine| in float32 (the caller asserts; the list is the report).
    """
    results: list[BlockResult] = []
    stream = embed(dump.input_ids)
    embedding = dump.tensors["embed"].repeat(1, dump.streams)
    results.append(_compare("embed", stream, embedding, tolerance))
    engine = {"stream": embedding}
    for before, site in engine_sites(dump):
        engine[site] = dump.tensors[site]
        results.append(_compare(site, blocks(site)(engine[before]), engine[site], tolerance))
    last = engine[f"layers.{dump.num_layers - 1}.ffn"]
    results.append(_compare("logits", head(last), dump.tensors["logits"], tolerance))
    return results


def _compare(site: str, ours: torch.Tensor, theirs: torch.Tensor, tolerance: float) -> BlockResult:
    if ours.shape != theirs.shape:
        raise ValueError(
            f"{site}: the plugin gave {tuple(ours.shape)}, the engine {tuple(theirs.shape)}"
        )
    diff = (ours.float() - theirs.float()).abs().max().item()
    return BlockResult(site, diff, theirs.abs().max().item(), tolerance)


def write_report(dump: EngineDump, variant: str, results: list[BlockResult]) -> None:
    """Where `bringup device check` asked for one (BRINGUP_DEVICE_BLOCKS_REPORT, a directory), the
    results as `<port>.<variant>.json`, which it turns into the port's record."""
    directory = os.environ.get("BRINGUP_DEVICE_BLOCKS_REPORT")
    if not directory:
        return
    report = {
        "port": dump.port,
        "variant": variant,
        "prefill": dump.prefill,
        "decode": int(dump.input_ids.shape[0]) - dump.prefill,
        "blocks": [
            {
                "site": r.site,
                "max_abs_diff": r.max_abs_diff,
                "tolerance": r.tolerance,
                "passed": r.passed,
            }
            for r in results
        ],
    }
    (Path(directory) / f"{dump.port}.{variant}.json").write_text(json.dumps(report))


def report(results: list[BlockResult]) -> str:
    """One line per block: its site, largest |Δ|, the engine's largest |value|, pass or FAIL."""
    return "\n".join(
        f"{r.site:<16} max|Δ| {r.max_abs_diff:.3e}  (max|x| {r.max_abs_value:.3e}, "
        f"tolerance {r.tolerance:.0e}) {'ok' if r.passed else 'FAIL'}"
        for r in results
    )
