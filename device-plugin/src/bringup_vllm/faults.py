"""Deliberate faults, switched on by BRINGUP_VLLM_FAULT (comma-separated names).

They exist so a test can serve a knowingly wrong plugin and see the device-vs-reference gate
fail: a gate that cannot fail proves nothing. No fault is on unless the variable names it.
"""

import os

KNOWN = frozenset({"rope-pairing"})


def active(name: str) -> bool:
    if name not in KNOWN:
        raise ValueError(f"unknown fault {name!r}; known: {sorted(KNOWN)}")
    return name in os.environ.get("BRINGUP_VLLM_FAULT", "").split(",")
