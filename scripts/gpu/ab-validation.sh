#!/usr/bin/env bash
# On a GPU machine without a Rust toolchain, with gpubench-bin/ from
# scripts/gpu/ab-build.sh: the runs behind docs/gpu-validation.md's "Base and head in
# one process: ab" section. $SUITE picks the benchmarks (launch-bound: add_1m,
# sdpa/128, request_stream; device-bound: matmul_bf16/4096, 8192, the MLP step).
#   PLAIN=1   one plain run of the suite (defaults) and one `ab` of HEAD against
#             itself (defaults): wall time, and verdicts on unchanged code
#   SELF=N    N more `ab` of HEAD against itself (--quick)
#   PLANT=N   N `ab` of HEAD against the planted head (--quick; once with defaults
#             when PLAIN=1)
# Every summary, run and wall time lands under $OUT/ab, bundled into one tarball;
# scripts/gpu/analyse-ab.py makes the tables.
set -uo pipefail
OUT="${OUT:-./gpu-out}"
B="${GPUBENCH_BIN:-./gpubench-bin}"
R="$OUT/ab"
mkdir -p "$R"
TORCH_DIR="$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
export LD_LIBRARY_PATH="$TORCH_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$R/nvidia-smi.csv" 2>&1
nproc > "$R/nproc.txt"
read -r -a SUITE <<< "${SUITE:-launch/add_1m launch/sdpa/128 launch/request_stream matmul/matmul_bf16/4096 matmul/matmul_bf16/8192 mlp_training/mlp_training_step}"
common=(--device "${DEVICE:-cuda:0}" --format json --no-report --fail-on never --exact)
timed() { # name, then the command
    local name=$1; shift
    local t0=$(date +%s%N)
    "$@" > "$R/$name.json" 2> "$R/$name.err"
    local code=$?
    echo "$name exit $code wall_ms $(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$R/times.txt"
}
ab() { # name, the libraries' directory, more options
    local name=$1 libs=$2; shift 2
    timed "$name" "$B/cargo-gpubench" ab --base-libraries "$libs/base" --head-libraries "$libs/head" \
        --out-dir "$R/$name" "$@" "${common[@]}" "${SUITE[@]}"
}
if [ "${PLAIN:-0}" = 1 ]; then
    timed run-plain "$B/cargo-gpubench" run --exe "$B/launch" --exe "$B/matmul" --exe "$B/mlp_training" \
        --no-baseline --out-dir "$R/run-plain" "${common[@]}" "${SUITE[@]}"
    ab self-default "$B/ab-self"
    ab plant-default "$B/ab-plant"
fi
for i in $(seq 1 "${SELF:-0}"); do ab "self-quick-$i" "$B/ab-self" --quick; done
for i in $(seq 1 "${PLANT:-0}"); do ab "plant-quick-$i" "$B/ab-plant" --quick; done
cat "$R/times.txt"
# The runs' records, without the HTML reports.
tar -C "$OUT" -czf "$OUT/ab.tar.gz" ab
