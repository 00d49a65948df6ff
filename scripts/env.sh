# Sourced by the project's scripts: installs libtorch 2.11.0 (PyPI's torch wheel) into
# a project-local virtual environment when missing, and exports what tch needs to
# build against it and what the loader needs to run it. Safe to source in an
# interactive shell: it changes no shell options and returns non-zero on failure.

GPUBENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TORCH_VERSION="2.11.0"
# The CUDA runtime headers' compiler part (crt/), which the torch wheel's CUDA headers
# include but do not ship: gpubench-core's CUDA shim compiles against them.
CUDA_CRT="nvidia-cuda-crt==13.0.88"
VENV="${GPUBENCH_VENV:-$GPUBENCH_ROOT/.venv}"
# One copy of torch, not two: without a project .venv, the one `cargo gpubench setup`
# installed (its cache: GPUBENCH_CACHE_DIR, else XDG_CACHE_HOME/gpubench, else
# ~/.cache/gpubench) serves the scripts too, with what they add to it below.
SETUP_VENV="${GPUBENCH_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpubench}/torch-$TORCH_VERSION"
if [[ -z "${GPUBENCH_VENV:-}" && ! -d "$VENV" && -f "$SETUP_VENV/.installed" ]]; then
    VENV="$SETUP_VENV"
fi
MARKER="$VENV/.gpubench-torch-$TORCH_VERSION-crt"

if [[ ! -f "$MARKER" && "$VENV" == "$SETUP_VENV" ]]; then
    echo "gpubench: using cargo gpubench setup's libtorch in $VENV; adding numpy and $CUDA_CRT" >&2
    "$VENV/bin/pip" install --quiet --disable-pip-version-check numpy "$CUDA_CRT" &&
        touch "$MARKER" || {
        echo "gpubench: failed to add numpy and $CUDA_CRT to $VENV (needs access to PyPI)" >&2
        return 1 2>/dev/null || exit 1
    }
elif [[ ! -f "$MARKER" ]]; then
    echo "gpubench: installing libtorch $TORCH_VERSION (PyPI torch wheel) into $VENV (about a minute, ~5 GB)" >&2
    python3 -m venv "$VENV" &&
        "$VENV/bin/pip" install --quiet --disable-pip-version-check "torch==$TORCH_VERSION" numpy "$CUDA_CRT" &&
        touch "$MARKER" || {
        echo "gpubench: failed to install torch==$TORCH_VERSION into $VENV (needs python3 with venv and pip, and access to PyPI)" >&2
        return 1 2>/dev/null || exit 1
    }
fi

TORCH_DIR="$("$VENV/bin/python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')" || {
    echo "gpubench: the venv at $VENV has no working torch: remove $MARKER and source this again" >&2
    return 1 2>/dev/null || exit 1
}
export LIBTORCH="$TORCH_DIR"
export LIBTORCH_INCLUDE="$TORCH_DIR"
export LIBTORCH_LIB="$TORCH_DIR"
export LD_LIBRARY_PATH="$TORCH_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GPUBENCH_PYTHON="$VENV/bin/python"
export PATH="$VENV/bin:$PATH"
