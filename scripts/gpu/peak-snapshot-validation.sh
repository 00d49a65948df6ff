#!/usr/bin/env bash
# The allocator's snapshot at a benchmark's peak, allocation frames named in process on
# release binaries, and a capacity search judged against its saved baseline, on one GPU
# (docs/gpu-validation.md, "What held memory at the peak"). Needs release binaries in
# gpubench-bin/: cargo-gpubench, oom, memory and mlp_training (bench executables).
# Writes everything under $OUT/peak and tars it into $OUT/peak.tar.gz. STEPS="1 2 3 4"
# picks the steps to run.
set -u
BIN=${BIN:-gpubench-bin}
FRAC=${FRAC:-0.05}
OUT=${OUT:-/tmp/peak-out}
R=$OUT/peak
mkdir -p "$R"
TORCH_LIB=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export LD_LIBRARY_PATH=$TORCH_LIB:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$R/nvidia-smi.csv" 2>&1
t0=$(date +%s)
step() { echo "== $1 ($(( $(date +%s) - t0 )) s)" | tee -a "$R/log.txt"; }
want() { [[ " ${STEPS:-1 2 3 4} " == *" $1 "* ]]; }

if want 1; then
    step "1. OOM by live tensors with --memory-history: frames of a release binary"
    GPUBENCH_RECORD_DIR=$R/records-history "$BIN/oom" --bench --exact oom_live_tensors --ignored \
        --memory-fraction "$FRAC" --memory-history > "$R/oom_history.txt" 2>&1
    echo "exit $?" >> "$R/oom_history.txt"
fi

if want 2; then
    step "2. --memory-peak-snapshot on the MLP training step and forward, from the bench executables"
    for exe in mlp_training memory; do
        "$BIN/$exe" --list --format terse > "$R/$exe-list.txt" 2>&1
    done
    id_mem=$(grep -m1 '^mlp_forward_batch/.*: benchmark' "$R/memory-list.txt" | sed 's/: benchmark$//')
    GPUBENCH_RECORD_DIR=$R/records-peak "$BIN/mlp_training" --bench --exact mlp_training_step \
        --memory-peak-snapshot > "$R/peak_mlp_training_step.txt" 2>&1
    echo "exit $?" >> "$R/peak_mlp_training_step.txt"
    GPUBENCH_RECORD_DIR=$R/records-peak "$BIN/memory" --bench --exact "$id_mem" \
        --memory-peak-snapshot --memory-history > "$R/peak_memory_history.txt" 2>&1
    echo "exit $? ($id_mem)" >> "$R/peak_memory_history.txt"
fi

if want 3; then
    step "3. the same through cargo gpubench run: terminal, Markdown and report"
    GPUBENCH_MEMORY_PEAK_SNAPSHOT=1 "$BIN/cargo-gpubench" run --exe "$BIN/mlp_training" \
        --exe "$BIN/memory" --processes 3 --no-baseline --out-dir "$R/run" \
        --summary-file "$R/run-summary.md" > "$R/run.txt" 2>&1
    echo "exit $?" >> "$R/run.txt"
fi

if want 4; then
    step "4. capacity of mlp_training_batch saved as a baseline, then searched again against it"
    "$BIN/cargo-gpubench" capacity --exe "$BIN/mlp_training" --memory-fraction "$FRAC" \
        --out-dir "$R/cap1" --baselines-dir "$R/baselines" --save-baseline main > "$R/capacity.txt" 2>&1
    echo "exit $?" >> "$R/capacity.txt"

    step "4b. again"
    "$BIN/cargo-gpubench" capacity --exe "$BIN/mlp_training" --memory-fraction "$FRAC" \
        --out-dir "$R/cap2" --baselines-dir "$R/baselines" --format json > "$R/capacity-again.json" 2> "$R/capacity-again.txt"
    echo "exit $?" >> "$R/capacity-again.txt"
fi

step "total"
tar -czf "$OUT/peak.tar.gz" -C "$OUT" peak
for f in oom_history.txt peak_mlp_training_step.txt peak_memory_history.txt run.txt capacity.txt capacity-again.txt; do
    [[ -f "$R/$f" ]] && { echo "----- $f"; tail -c 2500 "$R/$f"; }
done
