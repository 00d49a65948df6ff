#!/usr/bin/env python3
"""Tables for docs/gpu-validation.md from scripts/gpu/devices-validation.sh's output.

Usage: analyse-devices.py DEVICES_DIR

DEVICES_DIR holds suite-one-N.json / suite-all-N.json (the suite on one GPU and on
two), launch-one-N.json / launch-all-N.json (the launch-bound set alone) and
times.txt, and with PER_GPU=1 matmul-cuda0-N.json / matmul-cuda1-N.json. Prints the wall times and their ratio, then per benchmark the primary
figure (and kernel time where there is one) of every run, and the change of the
two-GPU runs' mean against the one-GPU runs' mean, with the spread within each side.
"""
import json
import pathlib
import statistics
import sys
from collections import defaultdict

d = pathlib.Path(sys.argv[1])
times = {}
for line in (d / "times.txt").read_text().splitlines():
    f = line.split()
    times[f[0]] = (f[2], int(f[-1]) / 1000.0)

print("## Wall time")
for prefix in ("suite", "launch"):
    one = [t for n, (_, t) in times.items() if n.startswith(f"{prefix}-one-")]
    both = [t for n, (_, t) in times.items() if n.startswith(f"{prefix}-all-")]
    if one and both:
        print(
            f"{prefix}: one GPU {', '.join(f'{t:.1f}' for t in one)} s; "
            f"two GPUs {', '.join(f'{t:.1f}' for t in both)} s; "
            f"ratio of means {statistics.mean(both) / statistics.mean(one):.2f}"
        )
for n, (code, t) in times.items():
    contended = ""
    if (d / f"{n}.json").exists():
        doc = json.loads((d / f"{n}.json").read_text())
        flagged = [
            b["name"]
            for b in doc["benchmarks"]
            if "contended" in ((b.get("summary") or {}).get("flags") or [])
        ]
        contended = f", {len(flagged)} of {len(doc['benchmarks'])} benchmarks contended"
    print(f"  {n}: exit {code}, {t:.1f} s{contended}")


def figures(name):
    """Per benchmark: (bound, kind, point ns, kernel point ns or None, device labels)."""
    out = {}
    doc = json.loads((d / f"{name}.json").read_text())
    for b in doc["benchmarks"]:
        s = b.get("summary") or {}
        kind = s.get("primary_kind")
        t = s.get(kind) if kind else None
        if not t:
            continue
        k = s.get("kernel")
        out[b["name"]] = (
            s.get("bound"),
            kind,
            t["estimate"]["point"],
            k["estimate"]["point"] if k else None,
            s.get("device_label"),
        )
    return out


def table(prefix):
    names = sorted(p.stem for p in d.glob(f"{prefix}-*.json"))
    one = [figures(n) for n in names if "-one-" in n]
    both = [figures(n) for n in names if "-all-" in n]
    if not one or not both:
        return
    print(f"\n## {prefix}: one GPU against two at once (mean of runs; spread = max/min - 1)")
    print("| benchmark | bound | figure | one GPU | two GPUs | change | spread one | spread two | devices (two) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for bench in sorted(set().union(*one) & set().union(*both)):
        for col, label in ((2, None), (3, "kernel")):
            a = [r[bench][col] for r in one if bench in r and r[bench][col]]
            b = [r[bench][col] for r in both if bench in r and r[bench][col]]
            if not a or not b:
                continue
            kind = label or one[0][bench][1]
            ma, mb = statistics.mean(a), statistics.mean(b)
            devs = ",".join(sorted({r[bench][4] for r in both if bench in r}))
            print(
                f"| {bench} | {one[0][bench][0]} | {kind} | {ma / 1e3:.2f} µs | {mb / 1e3:.2f} µs "
                f"| {100 * (mb / ma - 1):+.1f}% | {100 * (max(a) / min(a) - 1):.1f}% "
                f"| {100 * (max(b) / min(b) - 1):.1f}% | {devs} |"
            )


table("suite")
table("launch")

alone = sorted(p.stem for p in d.glob("matmul-cuda*.json"))
if alone:
    print("\n## The matmuls alone on each GPU (primary figure / kernel time, µs)")
    runs = [(n, figures(n)) for n in alone]
    print("| benchmark | " + " | ".join(n for n, _ in runs) + " |")
    print("|---|" + "---|" * len(runs))
    for bench in sorted(runs[0][1]):
        cells = []
        for _, f in runs:
            _, _, point, kernel, _ = f[bench]
            cells.append(f"{point / 1e3:.1f} / {kernel / 1e3:.1f}" if kernel else f"{point / 1e3:.1f}")
        print(f"| {bench} | " + " | ".join(cells) + " |")
