"""Independent CUDA-event measurement of the examples' operations with PyTorch.

Times the same operations the Rust examples benchmark (an 8192^3 bf16 matmul, the
MLP training step at batch 256, and the transformer encoder at a few sequence
lengths), with CUDA events around k back-to-back calls on the current stream, the
way nvbench and triton's do_bench do. Prints JSON: per-iteration device time in ns
(median of samples) per operation.

Usage: python3 cuda_event_reference.py [--out FILE]
"""

import argparse
import json
import statistics

import torch
import torch.nn as nn


def event_time_ns(fn, iters, samples=30, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    per_iter = []
    for _ in range(samples):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        per_iter.append(start.elapsed_time(end) * 1e6 / iters)
    return {"median_ns": statistics.median(per_iter), "iters": iters, "samples": samples}


def mlp(width=4096, depth=6, inp=1024, out=10):
    layers = []
    dim = inp
    for _ in range(depth):
        layers += [nn.Linear(dim, width), nn.ReLU()]
        dim = width
    layers.append(nn.Linear(dim, out))
    return nn.Sequential(*layers)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--only", help="measure only this benchmark id")
    args = parser.parse_args()
    dev = torch.device("cuda:0")
    results = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}

    def wanted(op_id):
        return args.only is None or args.only == op_id

    for n in (1024, 4096, 8192):
        for kind, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
            if not wanted(f"matmul_{kind}/{n}"):
                continue
            x = torch.randn(n, n, device=dev, dtype=dtype)
            y = torch.randn(n, n, device=dev, dtype=dtype)
            # Rust samples last ~10 ms; use the same batch length here.
            probe = event_time_ns(lambda: x @ y, 3, samples=3)
            iters = max(1, round(1e7 / probe["median_ns"]))
            results[f"matmul_{kind}/{n}"] = event_time_ns(lambda: x @ y, iters)

    if wanted("mlp_training_step"):
        results["mlp_training_step"] = train_step_time(mlp().to(dev), dev)

    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


def train_step_time(model, dev):
    # foreach=False: the per-parameter update libtorch's C++ SGD also runs.
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, foreach=False)
    xb = torch.randn(256, 1024, device=dev)
    yb = torch.randint(0, 10, (256,), device=dev)

    def step():
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return event_time_ns(step, 3)


if __name__ == "__main__":
    main()
