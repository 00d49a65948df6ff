#!/usr/bin/env bash
# What held memory at an OOM, and capacity, on one GPU (docs/gpu-validation.md,
# "What held memory at an OOM, and capacity"). Needs release binaries in
# gpubench-bin/: cargo-gpubench, oom and mlp_training (bench executables). Writes
# everything under $OUT/oom and tars it into $OUT/oom.tar.gz.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${BIN:-gpubench-bin}
FRAC=${FRAC:-0.05}
OUT=${OUT:-/tmp/oom-out}
R=$OUT/oom
mkdir -p "$R"
TORCH_LIB=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export LD_LIBRARY_PATH=$TORCH_LIB:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$R/nvidia-smi.csv" 2>&1
t0=$(date +%s)

echo "== 1. accumulated live tensors (512 MiB each), memory capped at $FRAC, history on" | tee "$R/log.txt"
GPUBENCH_RECORD_DIR=$R/records "$BIN/oom" --bench --exact oom_live_tensors --ignored \
    --memory-fraction "$FRAC" --memory-history > "$R/oom_live_tensors.txt" 2>&1
echo "exit $?" >> "$R/oom_live_tensors.txt"

echo "== 2. fragmented cache (every other 16 MiB block freed, then 1 GiB)" | tee -a "$R/log.txt"
GPUBENCH_RECORD_DIR=$R/records "$BIN/oom" --bench --exact oom_fragmented --ignored \
    --memory-fraction "$FRAC" > "$R/oom_fragmented.txt" 2>&1
echo "exit $?" >> "$R/oom_fragmented.txt"

echo "== 3. both through cargo gpubench run (terminal summary and report page)" | tee -a "$R/log.txt"
GPUBENCH_MEMORY_FRACTION=$FRAC "$BIN/cargo-gpubench" run --exe "$BIN/oom" --ignored --quick \
    --processes 1 --out-dir "$R/run" --no-baseline > "$R/run.txt" 2>&1
echo "exit $?" >> "$R/run.txt"

echo "== 4. capacity search of mlp_training_batch, capped at $FRAC" | tee -a "$R/log.txt"
s4=$(date +%s)
"$BIN/cargo-gpubench" capacity --exe "$BIN/mlp_training" --memory-fraction "$FRAC" \
    --out-dir "$R/run" --baselines-dir "$R/baselines/x" --save-baseline main -v > "$R/capacity.txt" 2>&1
echo "exit $? in $(( $(date +%s) - s4 )) s" >> "$R/capacity.txt"

echo "== 5. brute force: dense scan and a 10-size fit, by probes of the same harness" | tee -a "$R/log.txt"
python3 "$HERE/capacity_brute_force.py" "$BIN/mlp_training" mlp_training_batch \
    "$R/run/capacity/mlp_training_batch.json" "$FRAC" "$R/brute.json" > "$R/brute.txt" 2>&1
echo "exit $?" >> "$R/brute.txt"

echo "== 6. the search again, compared with the saved baseline" | tee -a "$R/log.txt"
"$BIN/cargo-gpubench" capacity --exe "$BIN/mlp_training" --memory-fraction "$FRAC" \
    --out-dir "$R/run2" --baselines-dir "$R/baselines/x" --format json > "$R/capacity-again.json" 2> "$R/capacity-again.txt"
echo "exit $?" >> "$R/capacity-again.txt"

echo "total $(( $(date +%s) - t0 )) s" | tee -a "$R/log.txt"
tar -czf "$OUT/oom.tar.gz" -C "$OUT" oom
cat "$R"/oom_live_tensors.txt "$R"/oom_fragmented.txt "$R"/capacity.txt "$R"/brute.txt | tail -c 9000
