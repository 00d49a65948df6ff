#!/usr/bin/env bash
# On a GPU machine without a Rust toolchain: the criterion example
# (examples/benches/criterion_matmul.rs, DeviceTime) against cargo gpubench on the
# same device-bound op, matmul f32 4096, twice each, alternating. Needs
# gpubench-bin/{criterion_matmul,matmul,cargo-gpubench}; prints one line per run and
# bundles everything into $OUT/criterion-agreement.tar.gz.
set -uo pipefail
OUT="${OUT:-./gpu-out}"
B="${GPUBENCH_BIN:-./gpubench-bin}"
W="$OUT/criterion"
mkdir -p "$W"
TORCH_DIR="$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
export LD_LIBRARY_PATH="$TORCH_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for i in 1 2; do
    CRITERION_HOME="$W/criterion$i" "$B/criterion_matmul" --bench --warm-up-time 2 \
        --measurement-time 5 --noplot matmul_f32/4096 > "$W/criterion$i.txt" 2>&1
    python3 - "$W/criterion$i" "$i" <<'PY'
import glob, json, sys
(est,) = [p for p in glob.glob(sys.argv[1] + "/**/new/estimates.json", recursive=True) if "f32" in p]
e = json.load(open(est))
print(json.dumps({"tool": "criterion DeviceTime", "run": int(sys.argv[2]),
                  "median_ns": e["median"]["point_estimate"], "mean_ns": e["mean"]["point_estimate"]}))
PY
    "$B/cargo-gpubench" run --exe "$B/matmul" --device cuda:0 --no-baseline --no-report \
        --fail-on never --format json --out-dir "$W/gpubench$i" --exact matmul/matmul_f32/4096 \
        > "$W/gpubench$i.json" 2> "$W/gpubench$i.err"
    python3 - "$W/gpubench$i.json" "$i" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
(b,) = doc["benchmarks"]
s = b["summary"]
kind = s["primary_kind"]
print(json.dumps({"tool": "cargo gpubench", "run": int(sys.argv[2]), "figure_ns": s[kind]["estimate"]["point"],
                  "timer": kind, "flags": s.get("flags")}))
PY
done | tee "$W/agreement.jsonl"
tar -C "$OUT" -czf "$OUT/criterion-agreement.tar.gz" criterion
