"""A checkpoint's config.json as written, and refusing by name what a family does not serve.

The families read the raw file rather than the object transformers builds from it: transformers
rewrites some lineages' fields (MiMo's rope_theta and partial_rotary_factor become a per-layer-type
rope_scaling table), and the plugin must read exactly the fields bringup's engine reads.
"""

import json
from functools import cache
from pathlib import Path
from typing import Any

from vllm.config import VllmConfig


class UnsupportedConfigError(ValueError):
    """A config.json field whose value this family cannot serve; the message names the field."""


class Config:
    """config.json of the served checkpoint, with the family's name for its messages."""

    def __init__(self, values: dict[str, Any], family: str) -> None:
        self.values = values
        self.family = family

    @classmethod
    def of(cls, vllm_config: VllmConfig, family: str) -> "Config":
        return cls(_read(str(Path(vllm_config.model_config.model) / "config.json")), family)

    def get(self, name: str, default: Any = None) -> Any:
        value = self.values.get(name)
        return default if value is None else value

    def need(self, name: str) -> Any:
        if self.values.get(name) is None:
            raise UnsupportedConfigError(
                f"{self.family}: config.json lacks {name}; it is required."
            )
        return self.values[name]

    def require(self, name: str, allowed: tuple[object, ...], why: str) -> None:
        """Refuse `name` unless its value (None when absent) is one of `allowed`."""
        value = self.values.get(name)
        if value not in allowed:
            self.refuse(name, why)

    def refuse(self, name: str, why: str) -> None:
        raise UnsupportedConfigError(
            f"{self.family}: config.json field {name}={self.values.get(name)!r} is not supported "
            f"({why}); change it, or extend bringup_vllm."
        )


@cache
def _read(path: str) -> dict[str, Any]:
    values: dict[str, Any] = json.loads(Path(path).read_text())
    return values
