#!/usr/bin/env bash
# On a GPU machine without a Rust toolchain: runs the example bench executables
# (built elsewhere and copied into gpubench-bin/) with `cargo-gpubench run --exe` on
# cuda:0, the opt-in out-of-memory benchmark, and the cross-check against PyTorch's
# CUDA events. Results land under $OUT (default ./gpu-out), bundled into tarballs.
set -uo pipefail
OUT="${OUT:-./gpu-out}"
BIN="${GPUBENCH_BIN:-./gpubench-bin}"
mkdir -p "$OUT"
TORCH_DIR="$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
export LIBTORCH="$TORCH_DIR"
export LD_LIBRARY_PATH="$TORCH_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$OUT/nvidia-smi.csv" 2>&1

EXES=()
for name in ${GPUBENCH_TARGETS:-matmul mlp_training memory}; do EXES+=(--exe "$BIN/$name"); done
"$BIN/cargo-gpubench" run "${EXES[@]}" --device cuda:0 --out-dir "$OUT/gpubench" \
    > "$OUT/summary.txt" 2> "$OUT/progress.txt"
echo "exit code $?" >> "$OUT/summary.txt"
if [[ -x "$BIN/memory" ]]; then
    "$BIN/cargo-gpubench" run --exe "$BIN/memory" --ignored --device cuda:0 --out-dir "$OUT/gpubench-oom" \
        > "$OUT/summary-oom.txt" 2>&1
    echo "exit code $?" >> "$OUT/summary-oom.txt"
fi
if [[ -z "${GPUBENCH_SKIP_CROSSCHECK:-}" ]]; then
    python3 "$(dirname "$0")/crosscheck.py" "$BIN" "$OUT" > "$OUT/crosscheck.txt" 2>&1
fi
tar -C "$OUT" -czf "$OUT/results.tar.gz" gpubench gpubench-oom 2>/dev/null
rm -rf "$OUT/gpubench" "$OUT/gpubench-oom"
