#!/usr/bin/env bash
# The device plugin's CI step: the pinned venv (cached under .cache/), the plugin's pytest, ruff and
# mypy, then every port's device check (real vLLM on the CPU against the reference engine), then the
# same check against a deliberately wrong plugin (RoPE pairing flipped), which must fail. pytest's
# block-by-block checks (tests/blocks.py) run `bringup device blocks <port>` themselves, so each
# compares with the engine of this checkout (built: npm ci; else from source through tsx).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
root="$(cd "$here/.." && pwd)"
venv="$root/.cache/device-venv"
"$here/scripts/setup-venv.sh"
(
  cd "$here"
  "$venv/bin/python" -m pytest -q
  "$venv/bin/ruff" check .
  "$venv/bin/ruff" format --check .
  "$venv/bin/mypy"
)
cd "$root"
npx bringup device check
if npx bringup device check mimo-v2.6-flash --fault rope-pairing --no-record; then
  echo "device check: the gate passed a plugin whose RoPE pairing is flipped; it must fail." >&2
  exit 1
fi
echo "device check: the wrong plugin (rope-pairing) failed its gate, as it must."
