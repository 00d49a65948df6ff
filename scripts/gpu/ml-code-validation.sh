#!/usr/bin/env bash
# On a GPU machine without a Rust toolchain, with gpubench-bin/ml-code/ from
# scripts/gpu/ml-code-build.sh: the runs behind docs/gpu-validation.md's "Verdicts on
# ordinary ML code" section (examples/benches/ml_code.rs).
#   PLAIN=N   a plain run of the base saved as baseline `base`, then N plain runs of
#             the planted revision compared with it (and N more of the base, A/A,
#             unless PLAIN_SELF=0)
#   PLANT=N   N `ab` of the base against the planted commit
#   SELF=N    N `ab` of the base against a commit that changes only a comment
#   QUICK=1   every `ab` with --quick; QUICK_PLAIN=1 every plain run
# Every summary lands under $OUT/ml-code with its wall time and exit code, bundled
# into one tarball; scripts/gpu/analyse-ml-code.py makes the tables.
set -uo pipefail
OUT="${OUT:-./gpu-out}"
B="${GPUBENCH_BIN:-./gpubench-bin/ml-code}"
R="$OUT/ml-code"
mkdir -p "$R"
TORCH_DIR="$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
export LD_LIBRARY_PATH="$TORCH_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > "$R/nvidia-smi.csv" 2>&1
quick=() plain_quick=()
[ "${QUICK:-0}" = 1 ] && quick=(--quick)
[ "${QUICK_PLAIN:-0}" = 1 ] && plain_quick=(--quick)
common=(--device "${DEVICE:-cuda:0}" --format json --no-report --fail-on never)
timed() { # name, then the command
    local name=$1; shift
    local t0=$(date +%s%N)
    "$@" > "$R/$name.json" 2> "$R/$name.err"
    local code=$?
    echo "$name exit $code wall_ms $(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$R/times.txt"
}
ab() { # name, the libraries' directory
    timed "$1" "$B/cargo-gpubench" ab --base-libraries "$2/base" --head-libraries "$2/head" \
        --out-dir "$R/$1" "${quick[@]}" "${common[@]}"
}
if [ "${PLAIN:-0}" -gt 0 ]; then
    timed plain-base "$B/cargo-gpubench" run --exe "$B/base/ml_code" --out-dir "$R/plain" \
        --baselines-dir "$R/baselines" --save-baseline base "${plain_quick[@]}" "${common[@]}"
    for i in $(seq 1 "$PLAIN"); do
        timed "plain-planted-$i" "$B/cargo-gpubench" run --exe "$B/planted/ml_code" \
            --out-dir "$R/plain" --baselines-dir "$R/baselines" --baseline base "${plain_quick[@]}" "${common[@]}"
        [ "${PLAIN_SELF:-1}" = 1 ] || continue
        timed "plain-self-$i" "$B/cargo-gpubench" run --exe "$B/base/ml_code" \
            --out-dir "$R/plain" --baselines-dir "$R/baselines" --baseline base "${plain_quick[@]}" "${common[@]}"
    done
fi
for i in $(seq 1 "${PLANT:-0}"); do ab "ab-plant-$i" "$B/ab-plant"; done
for i in $(seq 1 "${SELF:-0}"); do ab "ab-self-$i" "$B/ab-self"; done
cat "$R/times.txt"
python3 "$(dirname "$0")/analyse-ml-code.py" "$R" > "$R/analysis.txt"
tail -40 "$R/analysis.txt"
tar -C "$OUT" -czf "$OUT/ml-code${TAG:+-$TAG}.tar.gz" --exclude='*/report' ml-code
