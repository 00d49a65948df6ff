#!/usr/bin/env bash
# On a GPU machine without a Rust toolchain: the counters and kernel time of the
# launch example's request stream (ten inputs of varying length) in three runs of
# unchanged code, the first saving baseline `main` and the others compared with it.
# Before its stretches were whole cycles of the inputs, the counters gate called
# one such comparison regressed (+277 bytes allocated per call).
set -uo pipefail
OUT="${OUT:-./gpu-out}"
B="${GPUBENCH_BIN:-./gpubench-bin}"
R="$OUT/stream"
mkdir -p "$R"
TORCH_DIR="$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
export LD_LIBRARY_PATH="$TORCH_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
common=(--exe "$B/launch" --device cuda:0 --baselines-dir "$R/baselines" --no-report)
for i in 1 2 3; do
    if [ "$i" = 1 ]; then extra=(--no-baseline --save-baseline main); else extra=(--baseline main); fi
    "$B/cargo-gpubench" run --out-dir "$R/run-$i" "${common[@]}" "${extra[@]}" --format json \
        -- request_stream > "$R/run-$i.json" 2> "$R/run-$i.err"
    echo "run-$i exit $?" | tee -a "$R/exits.txt"
done
tar -C "$OUT" -czf "$OUT/stream-counters.tar.gz" stream
