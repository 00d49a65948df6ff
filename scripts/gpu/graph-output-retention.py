#!/usr/bin/env python3
"""Whether holding each call's output across captured calls changes CUDA-graph replay
time: PyTorch's replay of an add of 1M floats with outputs dropped at once (as
`do_bench_cudagraph` does) and held until the next call returns (as a Rust loop that
keeps its last output does), at two graph sizes, and the kernel's own duration from
the profiler, in a replay and in eager calls. Prints one JSON line, ns per call.

Run from the repository root on a GPU machine:
    python3 scripts/gpu/graph-output-retention.py
"""

import json
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, "examples/python")
import cuda_graph_reference as reference  # noqa: E402


def device_ns(prof):
    return sum(e.device_time_total for e in prof.key_averages() if e.device_time_total) * 1e3


def main():
    n = 1 << 20
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")

    def add():
        return x + y

    held = reference.keep_last(add)
    out = {
        "k200_r20": reference.graph_time_ns(add, k=200, replays=20),
        "k434_r5": reference.graph_time_ns(add, k=434, replays=5),
        "k434_r5_keep": reference.graph_time_ns(held, k=434, replays=5),
        "k111_r5_keep": reference.graph_time_ns(held, k=111, replays=5),
    }

    k, replays = 434, 5
    graph = reference.capture_graph(add, k)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(replays):
            graph.replay()
        end.record()
        end.synchronize()
    out["profiled_replay_per_call"] = start.elapsed_time(end) * 1e6 / (k * replays)
    out["profiled_busy_per_call"] = device_ns(prof) / (k * replays)

    calls = 1000
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            add()
        torch.cuda.synchronize()
    out["eager_busy_per_call"] = device_ns(prof) / calls
    print(json.dumps(out))


if __name__ == "__main__":
    main()
