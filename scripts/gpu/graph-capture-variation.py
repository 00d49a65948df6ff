#!/usr/bin/env python3
"""How much CUDA-graph replay of the same calls varies from one captured graph to the
next in one process: an add of 1M floats (outputs dropped at once, as
`do_bench_cudagraph` does) captured seven times, 125 calls a graph, the last two after
20,000 eager calls. Prints one JSON line of ns per call, one figure per graph, in
capture order. On an H200 the first graph of a process replayed at 2.28-2.29 µs and
every later one at 2.48-2.50 µs (the same through gpubench's shim, whose
`examples/graph_variation.rs` prints the same sequence).

Run on a GPU machine:
    python3 scripts/gpu/graph-capture-variation.py
"""

import json

import torch


def graph_ns(fn, k, replays=20, samples=10):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(k):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(k):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    per_call = []
    for _ in range(samples):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(replays):
            graph.replay()
        end.record()
        end.synchronize()
        per_call.append(start.elapsed_time(end) * 1e6 / (replays * k))
    return sorted(per_call)[samples // 2]


def main():
    n = 1 << 20
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")

    def add():
        return x + y

    graphs = [graph_ns(add, 125) for _ in range(5)]
    for _ in range(20000):
        add()
    torch.cuda.synchronize()
    graphs += [graph_ns(add, 125) for _ in range(2)]
    print(json.dumps({"add_1m_graph_ns": [round(g, 1) for g in graphs]}))


if __name__ == "__main__":
    main()
