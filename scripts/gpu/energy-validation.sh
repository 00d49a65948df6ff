#!/usr/bin/env bash
# On a GPU machine without a Rust toolchain: issue 38's measurement side.
#   1. matmul_bf16/{1024,4096,8192} with --flush-l2, 3 processes: kernel time and
#      device time now both start every call with a flushed L2;
#   2. matmul_bf16/{1024,8192} without it, 3 processes: the warm regime, for contrast;
#   3. matmul_bf16/8192 alone in 5 processes: energy per call, its spread between
#      windows and processes, the idle power, power-capped samples, % of peak.
# Bundles everything into $OUT/energy-validation.tar.gz; prints the figures
# (scripts/gpu/analyse-energy.py).
set -uo pipefail
OUT="${OUT:-./gpu-out}"
B="${GPUBENCH_BIN:-./gpubench-bin}"
mkdir -p "$OUT/e"
TORCH_DIR="$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
export LD_LIBRARY_PATH="$TORCH_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
common=(--device cuda:0 --fail-on never --format json --no-report --no-baseline)
run() { # name, then arguments
    local name=$1; shift
    local t0=$(date +%s%N)
    "$B/cargo-gpubench" run --out-dir "$OUT/e/$name" "$@" > "$OUT/e/$name.json" 2> "$OUT/e/$name.err"
    echo "$name exit $? wall_ms $(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$OUT/e/times.txt"
}
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/e/gpu.txt" 2>&1
run flush --exe "$B/matmul" "${common[@]}" --flush-l2 --processes 3 \
    --exact matmul_bf16/1024 matmul_bf16/4096 matmul_bf16/8192
run warm --exe "$B/matmul" "${common[@]}" --processes 3 --exact matmul_bf16/1024 matmul_bf16/8192
run energy --exe "$B/matmul" "${common[@]}" --processes 5 --exact matmul_bf16/8192
python3 scripts/gpu/analyse-energy.py "$OUT/e" | tee "$OUT/e/figures.txt"
tar -C "$OUT" -czf "$OUT/energy-validation.tar.gz" e
