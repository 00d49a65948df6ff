"""Kernel time of the launch-bound examples by PyTorch's own CUDA-graph replay.

Captures k calls of an add of 1M floats and of causal SDPA (bf16, [8, 16, 128, 64])
in a CUDA graph on a side stream after a warm-up there, replays it between CUDA
events and divides by the calls: triton's `do_bench_cudagraph`, the reference for
gpubench's kernel time. Prints one JSON line: per-call kernel time in ns (median of
samples) per operation, the same with each call's output held until the next call
returns (as a Rust loop that keeps its last output does), and the eager
back-to-back time for contrast.

Usage: python3 cuda_graph_reference.py
"""

import json

import torch
import torch.nn.functional as F

from cuda_event_reference import event_time_ns


def capture_graph(fn, k):
    """`k` calls of `fn` captured in a CUDA graph after a warm-up on a side stream,
    replayed once to upload it."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(k):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    return graph


def graph_time_ns(fn, k=200, replays=20, samples=10):
    graph = capture_graph(fn, k)
    timed = event_time_ns(graph.replay, replays, samples=samples, warmup=0)
    return timed["median_ns"] / k


def eager_time_ns(fn, iters=2000, samples=10):
    return event_time_ns(fn, iters, samples=samples, warmup=50)["median_ns"]


def main():
    n = 1 << 20
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    q, k, v = (torch.randn(8, 16, 128, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    ops = {
        "add_1m": lambda: x + y,
        "sdpa/128": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    }
    out = {}
    for name, fn in ops.items():
        out[name] = {
            "graph_ns": graph_time_ns(fn),
            # As a Rust benchmark loop holds its last output until the next call
            # returns: two output buffers in turn instead of one.
            "graph_keep_last_ns": graph_time_ns(keep_last(fn)),
            "eager_ns": eager_time_ns(fn),
        }
    print(json.dumps(out))


def keep_last(fn):
    held = [None]

    def call():
        held[0] = fn()

    return call


if __name__ == "__main__":
    main()
