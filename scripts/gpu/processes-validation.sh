#!/usr/bin/env bash
# On a GPU machine without a Rust toolchain: the A/A and planted-slowdown runs behind
# docs/gpu-validation.md's "Processes" section. Six runs of the suite (examples plus
# the launch-bound set) with the default process policy, the first saving baseline
# `main`, the others compared with it; then four runs of the device-bound matmuls with
# a planted 5% slowdown. Every run's JSON summary and records land under $OUT;
# scripts/gpu/analyse-processes.py turns them into the tables.
set -uo pipefail
OUT="${OUT:-./gpu-out}"
B="${GPUBENCH_BIN:-./gpubench-bin}"
mkdir -p "$OUT/runs"
TORCH_DIR="$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
export LD_LIBRARY_PATH="$TORCH_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$OUT/runs/nvidia-smi.csv" 2>&1
SUITE=(--exe "$B/matmul" --exe "$B/mlp_training" --exe "$B/memory" --exe "$B/launch")
common=(--device cuda:0 --baselines-dir "$OUT/runs/baselines" --fail-on never --format json --no-report)
run() { # name, then arguments
    local name=$1; shift
    local t0=$(date +%s%N)
    # --out-dir before the caller's arguments, which may end in `-- FILTER...`.
    "$B/cargo-gpubench" run --out-dir "$OUT/runs/$name" "$@" > "$OUT/runs/$name.json" 2> "$OUT/runs/$name.err"
    local code=$?
    echo "$name exit $code wall_ms $(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$OUT/runs/times.txt"
}
run aa0 "${SUITE[@]}" "${common[@]}" --no-baseline --save-baseline main
for i in 1 2 3 4 5; do run aa$i "${SUITE[@]}" "${common[@]}" --baseline main; done
for i in 1 2 3 4; do
    GPUBENCH_EXAMPLE_SLOWDOWN=1.05 run slow$i --exe "$B/matmul" "${common[@]}" --baseline main \
        -- matmul_f32 matmul_bf16/4096 matmul_bf16/8192
done
tar -C "$OUT" -czf "$OUT/processes-validation.tar.gz" runs
