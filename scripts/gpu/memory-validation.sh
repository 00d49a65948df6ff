#!/usr/bin/env bash
# On a GPU machine without a Rust toolchain: the runs behind docs/gpu-validation.md's
# "Memory verdicts and growth per call" section, bundled into
# $OUT/memory-validation.tar.gz.
#   1. the planted leak: `cached_lookup` (examples/benches/leak.rs) saved as baseline
#      `before-leak`, then 5 runs (each its own processes) with GPUBENCH_EXAMPLE_LEAK=1
#      (one 64 KiB tensor kept per call), each compared with it; and
#      `cached_lookup_leaking`, selected on purpose with --ignored, once;
#   2. unchanged code: the example suite (leak, memory, launch, mlp_training, matmul)
#      run 3 times, each saved as a baseline (suite1..3), then compared pairwise with
#      `cargo gpubench compare` (3 pairs x the suite's benchmarks).
# scripts/gpu/analyse-memory.py counts the memory verdicts and checks the growth.
set -uo pipefail
OUT="$(mkdir -p "${OUT:-./gpu-out}" && cd "${OUT:-./gpu-out}" && pwd)"
B="$(cd "${GPUBENCH_BIN:-./gpubench-bin}" && pwd)"
HERE="$(cd "$(dirname "$0")" && pwd)"
M="$OUT/m"
mkdir -p "$M/work"
TORCH_DIR="$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
export LD_LIBRARY_PATH="$TORCH_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Short bounds: memory figures need no long measurement, and device time is scarce.
export GPUBENCH_MEASUREMENT_TIME="${GPUBENCH_MEASUREMENT_TIME:-0.6}"
export GPUBENCH_WARM_UP_TIME="${GPUBENCH_WARM_UP_TIME:-0.2}"
common=(--device "${DEVICE:-cuda:0}" --fail-on never --format json --no-report --processes 3)
cd "$M/work"   # baselines go to ./gpubench/baselines with --exe
run() { # name, then arguments
    local name=$1; shift
    local t0=$(date +%s%N)
    "$B/cargo-gpubench" run --out-dir "$M/runs" "$@" > "$M/$name.json" 2> "$M/$name.err"
    echo "$name exit $? wall_ms $(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$M/times.txt"
}
run before-leak "${common[@]}" --exact --no-baseline --save-baseline before-leak --exe "$B/leak" -- cached_lookup
for i in 1 2 3 4 5; do
    GPUBENCH_EXAMPLE_LEAK=1 run leak$i "${common[@]}" --exact --baseline before-leak --exe "$B/leak" -- cached_lookup
done
run leaking-ignored "${common[@]}" --ignored --no-baseline --exe "$B/leak"
suite=(--exe)
for n in ${SUITE:-leak memory launch mlp_training matmul}; do suite+=("$B/$n"); done
# Within a device-time budget (BUDGET_S, seconds since the start): a suite run is
# started only while it can still finish, so the comparisons made are complete.
last=0
for i in 1 2 3; do
    if (( i > 1 && SECONDS + last > ${BUDGET_S:-300} )); then
        echo "suite$i skipped: ${SECONDS}s spent of a ${BUDGET_S:-300}s budget" | tee -a "$M/times.txt"
        break
    fi
    start=$SECONDS
    run suite$i "${common[@]}" --no-baseline --save-baseline suite$i "${suite[@]}"
    last=$(( SECONDS - start ))
done
for pair in "suite1 suite2" "suite1 suite3" "suite2 suite3"; do
    set -- $pair
    [[ -f "$M/$2.json" ]] || continue
    "$B/cargo-gpubench" compare "$1" "$2" --format json --fail-on never \
        > "$M/compare-$1-$2.json" 2> "$M/compare-$1-$2.err"
    echo "compare $1 $2 exit $?" | tee -a "$M/times.txt"
done
python3 "$HERE/analyse-memory.py" "$M" | tee "$M/analysis.txt"
tar -C "$OUT" -czf "$OUT/memory-validation.tar.gz" m
