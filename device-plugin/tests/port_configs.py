"""A port's tiny reference config as its manifest states it (what the engine reads)."""

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def reference_config(port: str) -> dict[str, Any]:
    manifest = yaml.safe_load((ROOT / "ports" / port / "port.yaml").read_text())
    return dict(manifest["reference"]["config"])
