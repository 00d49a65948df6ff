#!/usr/bin/env bash
# On a GPU machine without a Rust toolchain, with gpubench-bin/energy-accept/ from
# scripts/gpu/energy-accept-build.sh: issue 38's energy acceptance on the suite
# examples/benches/energy.rs (matmul_bf16_8192, matmul_4096, mlp_step), in one device
# call. Every run is gated on energy (GATE, default `energy`):
#   PLAIN=N   N plain runs of the unchanged suite, each compared with the one before
#             (`compare --gate-on energy`): 3 × (N - 1) A/A comparisons. The first run
#             also gives joules per call with their intervals and the power cap.
#   PLANT=N   N `ab` of the base against the planted commit (10% more work in each
#             benchmark): each must be regressed on energy.
#   SELF=N    N `ab` of the base against a commit that changes only a comment:
#             3 × N A/A comparisons.
#   PLAIN_PROCESSES, AB_PROCESSES   processes per benchmark of a plain run, of an `ab`
#   QUICK=1   (default) every run with --quick: warm-up 0.2 s, 1 s of samples split
#             over the processes; the energy windows (3 a process, each ≥ 3 steps of
#             the 100 ms counter, about 0.45 s) are not shortened by it
#             (GPUBENCH_WARM_UP_TIME, GPUBENCH_MEASUREMENT_TIME, when exported, shorten
#             them further for every run alike)
#   BUDGET_S  no run starts that its estimate says would end past this many seconds
#             from the start (default 520); skipped runs are listed in times.txt
#   DEVICE    cuda:0 (default), or cpu to shake the script out without a GPU
# The order (plain-1, the planted `ab`s, then plain and self `ab` runs in turn) puts
# the figures and the planted verdicts first should the budget run out. Results are
# bundled into $OUT/energy-accept${TAG:+-TAG}.tar.gz, with the analysis
# (scripts/gpu/analyse-energy-accept.py) and times.txt beside it: three files.
#
# Device time, estimated from the H200 records in docs/gpu-runs/ (wall time of a
# process = manifest duration_s / processes):
#   * a plain process without energy: 1.1-1.6 s (ml-code plain --quick runs, 4096²
#     matmul 1.1 s); energy adds 3 windows of 0.40-0.54 s (energy/recheck records:
#     1.36 s): about 2.6 s a process, 3.0 s for the 8 ms training step
#   * an `ab` (paired) process without energy: 1.6-2.1 s (ml-code --quick `ab`);
#     paired energy alternates both sides' windows: + about 2.7 s, so about 4.5 s
#   * each run: about 5 s of its own (listing, loading, analysis: wall time less the
#     sum of its benchmarks' durations, ml-code runs); a `compare` well under 1 s
#   So a plain run ≈ 5 + 3 × PLAIN_PROCESSES × 2.7 s (3 processes: 29 s), an `ab`
#   ≈ 5 + 3 × AB_PROCESSES × 4.5 s (3: 46 s, 5: 73 s). The defaults PLAIN=9 SELF=2
#   PLANT=3 with 3 processes each: 9 × 29 + 5 × 46 ≈ 490 s, giving 24 plain and 6
#   `ab` A/A comparisons and 3 × 3 planted verdicts. The script corrects its
#   estimates with each run's measured time before it starts the next.
set -uo pipefail
start=$(date +%s)
OUT="${OUT:-./gpu-out}"
B="${GPUBENCH_BIN:-./gpubench-bin/energy-accept}"
PLAIN="${PLAIN:-9}" SELF="${SELF:-2}" PLANT="${PLANT:-3}"
PLAIN_PROCESSES="${PLAIN_PROCESSES:-3}" AB_PROCESSES="${AB_PROCESSES:-3}"
GATE="${GATE:-energy}" BUDGET_S="${BUDGET_S:-520}" DEVICE="${DEVICE:-cuda:0}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$OUT"
# Everything but the bundle and its analysis stays out of $OUT (few files come back).
W="$(mktemp -d)"
R="$W/energy-accept"
mkdir -p "$R"
if [ -z "${TORCH_DIR:-}" ]; then
    TORCH_DIR="$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
fi
export LD_LIBRARY_PATH="$TORCH_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit \
    --format=csv > "$R/nvidia-smi.csv" 2>&1
quick=()
[ "${QUICK:-1}" = 1 ] && quick=(--quick)
common=(--device "$DEVICE" --format json --no-report --fail-on never --gate-on "$GATE" "${quick[@]}")
# Seconds a run of each kind is expected to take; replaced by the last one measured.
declare -A estimate=(
    [plain]=$(( 5 + 3 * PLAIN_PROCESSES * 27 / 10 ))
    [ab]=$(( 5 + 3 * AB_PROCESSES * 45 / 10 ))
)
echo "estimate: plain run ${estimate[plain]} s, ab ${estimate[ab]} s; PLAIN=$PLAIN PLANT=$PLANT SELF=$SELF: $(( PLAIN * estimate[plain] + (PLANT + SELF) * estimate[ab] )) s of BUDGET_S=$BUDGET_S" |
    tee "$R/times.txt"
elapsed() { echo $(( $(date +%s) - start )); }
fits() { # kind: whether a run of it would end within the budget
    [ $(( $(elapsed) + estimate[$1] )) -le "$BUDGET_S" ]
}
timed() { # kind, name, then the command; stdout to name.json
    local kind=$1 name=$2; shift 2
    if ! fits "$kind"; then
        echo "$name skipped: ${estimate[$kind]} s would end past BUDGET_S=$BUDGET_S (elapsed $(elapsed) s)" | tee -a "$R/times.txt"
        return 1
    fi
    local t0
    t0=$(date +%s%N)
    "$@" > "$R/$name.json" 2> "$R/$name.err"
    local code=$? s=$(( ($(date +%s%N) - t0) / 1000000000 ))
    estimate[$kind]=$(( s > 0 ? s : 1 ))
    echo "$name exit $code wall_s $s elapsed_s $(elapsed)" | tee -a "$R/times.txt"
}
plain() { # i: the i-th plain run of the base, compared with the one before
    local i=$1
    timed plain "plain-$i" "$B/cargo-gpubench" run --exe "$B/base/energy" --out-dir "$R/plain-$i" \
        --no-baseline --processes "$PLAIN_PROCESSES" --summary-file "$R/plain-$i.md" "${common[@]}" ||
        return 1
    [ "$i" -gt 1 ] || return 0
    local t0
    t0=$(date +%s%N)
    "$B/cargo-gpubench" compare "$R/plain-$((i - 1))" "$R/plain-$i" --format json --fail-on never \
        --gate-on "$GATE" --summary-file "$R/aa-plain-$i.md" > "$R/aa-plain-$i.json" 2> "$R/aa-plain-$i.err"
    echo "aa-plain-$i exit $? wall_s $(( ($(date +%s%N) - t0) / 1000000000 )) elapsed_s $(elapsed)" | tee -a "$R/times.txt"
}
ab() { # name, the libraries' directory
    timed ab "$1" "$B/cargo-gpubench" ab --base-libraries "$2/base" --head-libraries "$2/head" \
        --out-dir "$R/$1" --processes "$AB_PROCESSES" --summary-file "$R/$1.md" "${common[@]}"
}
[ "$PLAIN" -gt 0 ] && plain 1
for i in $(seq 1 "$PLANT"); do ab "ab-plant-$i" "$B/ab-plant"; done
n=$(( PLAIN > SELF + 1 ? PLAIN : SELF + 1 ))
for i in $(seq 2 "$n"); do
    [ "$i" -le "$PLAIN" ] && plain "$i"
    [ "$(( i - 1 ))" -le "$SELF" ] && ab "ab-self-$(( i - 1 ))" "$B/ab-self"
done
echo "total elapsed_s $(elapsed)" | tee -a "$R/times.txt"
python3 "$here/analyse-energy-accept.py" "$R" > "$R/analysis.txt" 2>&1
tail -60 "$R/analysis.txt"
cp "$R/analysis.txt" "$OUT/energy-accept${TAG:+-$TAG}-analysis.txt"
cp "$R/times.txt" "$OUT/energy-accept${TAG:+-$TAG}-times.txt"
tar -C "$W" -czf "$OUT/energy-accept${TAG:+-$TAG}.tar.gz" --exclude='*/report' energy-accept
rm -rf "$W"
ls -la "$OUT"
