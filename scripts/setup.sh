#!/usr/bin/env bash
# Idempotent set-up: .venv with the project installed editable plus everything the tools
# need. Re-runs only when pyproject.toml or this script changed (a stamp holds their hash).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv
STAMP="$VENV/.setup-stamp"
HASH=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$HASH" ] && [ -x "$VENV/bin/simtgpu" ]; then
    exit 0
fi

echo "setup: creating $VENV and installing simtgpu[dev] (first run only)"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
# (this machine's pip configuration warns about absent local indexes; hide only that noise)
quiet() { "$@" 2>&1 | { grep -v "^WARNING: Location 'file:" || true; }; }
quiet "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[dev]"

# FST waveforms need the lz4 headers for Verilator's tracing library: as root (a container,
# CI) set-up installs them with apt-get, saying so first; SIMTGPU_NO_APT=1 skips that.
if [ ! -f /usr/include/lz4.h ]; then
    if [ "${SIMTGPU_NO_APT:-0}" = 1 ]; then
        echo "setup: SIMTGPU_NO_APT=1: not installing liblz4-dev; FST waveforms unavailable, VCD works"
    elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "setup: running 'apt-get update && apt-get install liblz4-dev' as root: Verilator's"
        echo "setup: FST waveform writer needs the lz4 headers (SIMTGPU_NO_APT=1 skips this)"
        (apt-get update -qq && apt-get install -y -qq liblz4-dev >/dev/null) \
            || echo "setup: warning: liblz4-dev not installed; FST tracing unavailable, VCD works"
    else
        echo "setup: warning: /usr/include/lz4.h missing; install liblz4-dev for FST waveforms"
    fi
fi

# ptxas checks the PTX the compiler emits; take NVIDIA's PyPI package when none is on PATH.
if ! command -v ptxas >/dev/null; then
    echo "setup: no ptxas on PATH; installing nvidia-cuda-nvcc into $VENV"
    quiet "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check nvidia-cuda-nvcc \
        || echo "setup: warning: nvidia-cuda-nvcc not installed; PTX assembly tests will skip"
fi

echo "$HASH" > "$STAMP"
echo "setup: done"
