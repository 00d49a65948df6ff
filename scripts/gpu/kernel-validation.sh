#!/usr/bin/env bash
# On a GPU machine without a Rust toolchain: the runs behind docs/gpu-validation.md's
# "Kernel time and counters" section.
#   1. a first look at add_1m (captured) and scalar_readback (not capturable: it
#      reads back), straight from the bench executable;
#   2. add_1m, sdpa/128 and scalar_readback in 5 processes: kernel time and its
#      spread over processes beside the eager spread;
#   3. add_1m unchanged (4 runs), with a planted extra kernel (5) and with 10% more
#      elements (5), 3 processes each: compared offline by
#      scripts/gpu/analyse-kernels.py;
#   4. with REFERENCE=1, PyTorch's own CUDA-graph replay of the same ops, 5 processes,
#      and how replay varies from one captured graph to the next, in PyTorch and
#      through gpubench's shim (examples/graph_variation.rs), 3 processes each.
set -uo pipefail
OUT="${OUT:-./gpu-out}"
B="${GPUBENCH_BIN:-./gpubench-bin}"
mkdir -p "$OUT/k"
TORCH_DIR="$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
export LD_LIBRARY_PATH="$TORCH_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
common=(--device cuda:0 --fail-on never --format json --no-report --no-baseline)
run() { # name, then arguments
    local name=$1; shift
    local t0=$(date +%s%N)
    "$B/cargo-gpubench" run --out-dir "$OUT/k/$name" "$@" > "$OUT/k/$name.json" 2> "$OUT/k/$name.err"
    echo "$name exit $? wall_ms $(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$OUT/k/times.txt"
}
# A first look, so a broken shim shows at once in the output.
for bench in add_1m scalar_readback; do
    GPUBENCH_RECORD_DIR="$OUT/k/smoke" "$B/launch" --bench --device cuda:0 --measurement-time 0.2 --exact "$bench" 2>&1 | head -20
done
run launch5 --exe "$B/launch" "${common[@]}" --processes 5 --exact add_1m sdpa/128 scalar_readback
# The harness reads its timing options from the environment; cargo gpubench splits
# the measurement time over the processes.
for i in 1 2 3 4 5; do
    [[ $i -le 4 ]] && GPUBENCH_MEASUREMENT_TIME=2 GPUBENCH_WARM_UP_TIME=0.5 \
        run add_same$i --exe "$B/launch" "${common[@]}" --exact add_1m
    GPUBENCH_MEASUREMENT_TIME=2 GPUBENCH_WARM_UP_TIME=0.5 GPUBENCH_EXAMPLE_EXTRA_KERNEL=1 \
        run add_extra$i --exe "$B/launch" "${common[@]}" --exact add_1m
    GPUBENCH_MEASUREMENT_TIME=2 GPUBENCH_WARM_UP_TIME=0.5 GPUBENCH_EXAMPLE_ELEMENTS=1.1 \
        run add_more$i --exe "$B/launch" "${common[@]}" --exact add_1m
done
if [[ -n "${REFERENCE:-}" ]]; then
    for i in 1 2 3 4 5; do python3 examples/python/cuda_graph_reference.py; done > "$OUT/k/pytorch-graph.jsonl" 2> "$OUT/k/pytorch-graph.err"
    cat "$OUT/k/pytorch-graph.jsonl"
    for i in 1 2 3; do
        python3 scripts/gpu/graph-capture-variation.py | sed 's/^/{"capture": "pytorch", /; s/{"add/"add/'
        [[ -x "$B/graph_variation" ]] && "$B/graph_variation" | sed 's/^/{"capture": "gpubench shim", /; s/{"add/"add/'
    done > "$OUT/k/graph-variation.jsonl" 2>> "$OUT/k/pytorch-graph.err"
    cat "$OUT/k/graph-variation.jsonl"
fi
cat "$OUT/k/times.txt"
tar -C "$OUT" -czf "$OUT/kernel-validation.tar.gz" k
