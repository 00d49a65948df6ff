#!/usr/bin/env bash
# On a GPU machine without a Rust toolchain: the measure jobs of
# .github/workflows/gpubench-matrix.yml, word for word, for N=2 parts run one after
# the other (as two jobs of the matrix landing on this machine would), from the
# archive $ARCHIVE built elsewhere. Each part's run directory lands in
# $OUT/matrix/part-K/ as the job uploads it; merge them elsewhere with the
# template's merge command.
set -uo pipefail
OUT="${OUT:-./gpu-out}"
B="${GPUBENCH_BIN:-./gpubench-bin}"
ARCHIVE="${ARCHIVE:-$B/suite.tar.gz}"
PARTS=2
R="$OUT/matrix"
mkdir -p "$R"
TORCH_DIR="$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
export LD_LIBRARY_PATH="$TORCH_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for part in $(seq 1 $PARTS); do
    t0=$(date +%s%N)
    "$B/cargo-gpubench" run --archive "$ARCHIVE" \
        --partition "hash:$part/$PARTS" \
        --devices all --no-baseline --no-report --out-dir "$R/out-$part" \
        --bench matmul,mlp_training,memory,launch \
        > "$R/part-$part.txt" 2> "$R/part-$part.err"
    code=$?
    echo "part-$part exit $code wall_ms $(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$R/times.txt"
    mkdir -p "$R/part-$part" && cp -r "$R/out-$part/runs/." "$R/part-$part/"
    rm -rf "$R/out-$part"
done
tar -C "$OUT" -czf "$OUT/matrix-validation.tar.gz" matrix
