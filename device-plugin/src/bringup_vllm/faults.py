"""Deliberate faults, switched on by BRINGUP_VLLM_FAULT (comma-separated names).

They exist so a test can serve a knowingly wrong plugin and see the device-vs-reference gate
fail: a gate that cannot fail proves nothing. No fault is on unless the variable names it.
"""

import os

# rope-pairing: RoPE pairs the other features (rope.py, dsa.py); kda-gate-sign: KDA's
# write-strength gate flipped (kda.py); dsa-dense: DSA's layers attend every earlier token, as
# vllm-gaudi runs them (dsa.py).
KNOWN = frozenset({"rope-pairing", "kda-gate-sign", "dsa-dense"})


def active(name: str) -> bool:
    """Whether fault `name` is switched on; an unknown name in the variable is refused."""
    asked = {n for n in os.environ.get("BRINGUP_VLLM_FAULT", "").split(",") if n}
    unknown = (asked | {name}) - KNOWN
    if unknown:
        raise ValueError(
            f"unknown fault(s) {sorted(unknown)} in BRINGUP_VLLM_FAULT; known: {sorted(KNOWN)}"
        )
    return name in asked
