#!/usr/bin/env bash
# On a GPU machine without a Rust toolchain: the checks behind issue 16 ("know the
# machine"). Needs the prebuilt binaries in ./gpubench-bin/ (see
# docs/gpu-validation.md, "How to reproduce": matmul and cargo-gpubench) and
# PyTorch under python3. Runs, on cuda:0:
#   1. `cargo-gpubench doctor` on the quiet machine (expect exit 0 or the problems
#      it names, e.g. persistence mode off),
#   2. matmul_bf16/8192 alone (expect no `contended` flag, SM clocks in the record),
#   3. the same while a second process runs large matmuls on the GPU (expect the
#      `contended` flag naming that process, and `doctor` listing it, exit 5),
#   4. the same with --flush-l2 (the rested-GPU regime),
# and bundles every output into $OUT/telemetry-validation.tar.gz.
set -uo pipefail
OUT="${OUT:-./gpu-out}"
B="${GPUBENCH_BIN:-./gpubench-bin}"
W="$OUT/telemetry"
mkdir -p "$W"
TORCH_DIR="$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
export LD_LIBRARY_PATH="$TORCH_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LIBTORCH="$TORCH_DIR"
nvidia-smi -q -d CLOCK,PERFORMANCE,TEMPERATURE,POWER > "$W/nvidia-smi-before.txt" 2>&1
common=(--device cuda:0 --no-baseline --fail-on never --processes 3)
run() { # name, then arguments
    local name=$1; shift
    "$B/cargo-gpubench" run --out-dir "$W/$name" "$@" > "$W/$name.txt" 2> "$W/$name.err"
    echo "$name exit $?" | tee -a "$W/exits.txt"
}
"$B/cargo-gpubench" doctor > "$W/doctor-quiet.txt" 2>&1
echo "doctor-quiet exit $?" | tee -a "$W/exits.txt"
run alone --exe "$B/matmul" "${common[@]}" -- matmul_bf16/8192

# A second process that keeps the GPU busy with large matmuls for up to 10 minutes.
python3 - > "$W/load.txt" 2>&1 <<'PY' &
import time, torch
x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
print("load pid", __import__("os").getpid(), flush=True)
end = time.time() + 600
while time.time() < end:
    for _ in range(20):
        y = x @ x
    torch.cuda.synchronize()
PY
LOAD=$!
sleep 15 # torch's import and CUDA start-up
"$B/cargo-gpubench" doctor > "$W/doctor-loaded.txt" 2>&1
echo "doctor-loaded exit $?" | tee -a "$W/exits.txt"
run contended --exe "$B/matmul" "${common[@]}" -- matmul_bf16/8192
kill "$LOAD" 2>/dev/null
wait "$LOAD" 2>/dev/null

run flushed --exe "$B/matmul" "${common[@]}" --flush-l2 -- matmul_bf16/8192
nvidia-smi -q -d CLOCK,PERFORMANCE,TEMPERATURE,POWER > "$W/nvidia-smi-after.txt" 2>&1
tar -C "$OUT" -czf "$OUT/telemetry-validation.tar.gz" telemetry
echo "outputs in $OUT/telemetry-validation.tar.gz"
