#!/usr/bin/env bash
# On a machine with two GPUs of one model and no Rust toolchain: the runs behind
# docs/gpu-validation.md's "Several GPUs" section.
#  1. The suite (matmul, mlp_training, memory, launch) on one GPU (`--devices cuda:0`)
#     and on both (`--devices all`), twice each, alternating: wall time and medians.
#  2. The launch-bound set alone, on one GPU and on both at once (the most the two
#     processes can contend for the host), twice each, alternating.
#  3. With PER_GPU=1, the matmuls alone on each GPU in turn, twice: how the two GPUs
#     differ when neither shares the host.
#  4. An archive built elsewhere (`$ARCHIVE`), run as two jobs of a CI matrix at
#     once, `--partition count:1/2` on cuda:0 and `count:2/2` on cuda:1, each into its
#     own output directory (as two machines would); they are merged elsewhere.
# Every run's JSON summary, records and wall time land under $OUT, bundled into one
# tarball; scripts/gpu/analyse-devices.py makes the tables.
set -uo pipefail
OUT="${OUT:-./gpu-out}"
B="${GPUBENCH_BIN:-./gpubench-bin}"
ARCHIVE="${ARCHIVE-$B/suite.tar.gz}"
R="$OUT/devices"
mkdir -p "$R"
TORCH_DIR="$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
export LD_LIBRARY_PATH="$TORCH_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$R/nvidia-smi.csv" 2>&1
nproc > "$R/nproc.txt"
SUITE=(--exe "$B/matmul" --exe "$B/mlp_training" --exe "$B/memory" --exe "$B/launch")
common=(--no-baseline --format json --no-report)
run() { # name, then arguments
    local name=$1; shift
    local t0=$(date +%s%N)
    "$B/cargo-gpubench" run --out-dir "$R/$name" "$@" > "$R/$name.json" 2> "$R/$name.err"
    local code=$?
    echo "$name exit $code wall_ms $(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$R/times.txt"
}
[ "${SKIP_SUITE:-0}" = 1 ] || for i in 1 2; do
    run suite-one-$i "${SUITE[@]}" "${common[@]}" --devices cuda:0
    run suite-all-$i "${SUITE[@]}" "${common[@]}" --devices all
done
[ "${SKIP_SUITE:-0}" = 1 ] || for i in 1 2; do
    run launch-all-$i --exe "$B/launch" "${common[@]}" --devices all
    run launch-one-$i --exe "$B/launch" "${common[@]}" --devices cuda:0
done
# The matmuls on each GPU alone, to tell one GPU from the other apart from running
# side by side.
[ "${PER_GPU:-0}" = 1 ] && for i in 1 2; do
    run matmul-cuda0-$i --exe "$B/matmul" "${common[@]}" --devices cuda:0
    run matmul-cuda1-$i --exe "$B/matmul" "${common[@]}" --devices cuda:1
done
# Two jobs of a CI matrix, from one archive, at once.
if [ -f "$ARCHIVE" ]; then
t0=$(date +%s%N)
"$B/cargo-gpubench" run --archive "$ARCHIVE" --partition count:1/2 --devices cuda:0 \
    --out-dir "$R/part-1" --bench matmul,mlp_training,memory,launch --no-report --format json \
    > "$R/part-1.json" 2> "$R/part-1.err" &
p1=$!
"$B/cargo-gpubench" run --archive "$ARCHIVE" --partition count:2/2 --devices cuda:1 \
    --out-dir "$R/part-2" --bench matmul,mlp_training,memory,launch --no-report --format json \
    > "$R/part-2.json" 2> "$R/part-2.err" &
p2=$!
wait $p1; c1=$?
wait $p2; c2=$?
echo "parts exit $c1 $c2 wall_ms $(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$R/times.txt"
fi
tar -C "$OUT" -czf "$OUT/devices-validation.tar.gz" devices
