#!/usr/bin/env bash
# On a GPU machine without a Rust toolchain: issue 38's "one L2 regime per row".
#   1. matmul_bf16/{2048,8192} with --flush-l2, 3 processes: device time (one call a
#      sample, the flush queued ahead of the start event) against kernel time (graph
#      replays of one call, each paced as a sample is, the clock read after each);
#   2. the same without --flush-l2, 3 processes: the warm regime, as before.
# Prints kernel/device ratios per benchmark and per process and the clocks both
# timers ran at (scripts/gpu/analyse-flush.py); the target is 0.95-1.05 with the
# flush at both sizes. Bundles everything into $OUT/flush-validation.tar.gz.
# Binaries come from $GPUBENCH_BIN (default ./gpubench-bin): cargo-gpubench and the
# examples' matmul bench executable, built as for energy-validation.sh.
set -uo pipefail
OUT="${OUT:-./gpu-out}"
B="${GPUBENCH_BIN:-./gpubench-bin}"
HERE="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$OUT/f"
TORCH_DIR="$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
export LD_LIBRARY_PATH="$TORCH_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
common=(--device cuda:0 --fail-on never --format json --no-report --no-baseline --processes 3)
sizes=(--exact matmul_bf16/2048 matmul_bf16/8192)
run() { # name, then arguments
    local name=$1; shift
    local t0=$(date +%s%N)
    "$B/cargo-gpubench" run --out-dir "$OUT/f/$name" "$@" > "$OUT/f/$name.json" 2> "$OUT/f/$name.err"
    echo "$name exit $? wall_ms $(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$OUT/f/times.txt"
}
"$B/matmul" --list --format terse --device cuda:0 2>/dev/null | grep -q 'matmul_bf16/2048' \
    || echo "warning: $B/matmul lists no matmul_bf16/2048 (built before it was added?)"
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/f/gpu.txt" 2>&1
run flush --exe "$B/matmul" "${common[@]}" --flush-l2 "${sizes[@]}"
run warm --exe "$B/matmul" "${common[@]}" "${sizes[@]}"
python3 "$HERE/analyse-flush.py" "$OUT/f" | tee "$OUT/f/figures.txt"
tar -C "$OUT" -czf "$OUT/flush-validation.tar.gz" f
