#!/usr/bin/env python3
"""Reads the runs of scripts/gpu/kernel-validation.sh and judges them offline with
`cargo gpubench compare`: the spread of kernel time over 5 processes beside the eager
spread, unchanged code against itself (A/A), the planted extra kernel, and the planted
10% more elements. Prints Markdown for docs/gpu-validation.md.

Usage: analyse-kernels.py K_DIR CARGO_GPUBENCH [PYTORCH_GRAPH_JSONL]
  K_DIR           the extracted `k/` folder of kernel-validation.tar.gz
  CARGO_GPUBENCH  a cargo-gpubench executable of this checkout
"""

import glob
import itertools
import json
import os
import statistics
import subprocess
import sys


def run_dir(k_dir, name):
    dirs = glob.glob(os.path.join(k_dir, name, "runs", "*"))
    if len(dirs) != 1:
        sys.exit(f"{name}: expected one run, found {dirs}")
    return dirs[0]


def compare(exe, base, cur):
    out = subprocess.run(
        [exe, "compare", base, cur, "--format", "json", "--fail-on", "never"],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        sys.exit(f"compare {base} {cur} failed ({out.returncode}): {out.stderr}")
    doc = json.loads(out.stdout)
    (c,) = doc["comparison"]["set"]["comparisons"]
    o = c["outcome"]
    if o["status"] != "compared":
        sys.exit(f"{base} vs {cur}: {o}")
    counters = o.get("counters")
    return {
        "time": o["comparison"]["verdict"],
        "time_change": o["comparison"]["change"]["point"],
        "kernel": o["kernel"]["verdict"] if o.get("kernel") else None,
        "kernel_change": o["kernel"]["change"]["point"] if o.get("kernel") else None,
        "counters": counters,
        "kernel_changes": o.get("kernel_changes", []),
    }


def spread(xs):
    return (max(xs) - min(xs)) / min(xs)


def tally(results, key):
    out = {}
    for r in results:
        out[r[key]] = out.get(r[key], 0) + 1
    return ", ".join(f"{n} {v}" for v, n in sorted(out.items(), key=lambda x: -x[1]))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    k_dir, exe = sys.argv[1], sys.argv[2]

    print("### Kernel time over 5 processes\n")
    print("| benchmark | method | kernel time per process | range | eager (device) per process | range | launch overhead |")
    print("|---|---|---|---|---|---|---|")
    doc = json.load(open(os.path.join(k_dir, "launch5.json")))
    for b in doc["benchmarks"]:
        s = b["summary"]
        k = s["kernel"]["processes"]["medians"]
        d = s["device"]["processes"]["medians"]
        print(
            f"| `{b['id']}` | {s['kernel_method']} | "
            + " ".join(f"{x / 1e3:.3f}" for x in k)
            + f" µs | {spread(k) * 100:.1f}% | "
            + " ".join(f"{x / 1e3:.2f}" for x in d)
            + f" µs | {spread(d) * 100:.0f}% | {s['launch_overhead'] * 100:.0f}% |"
        )
    if len(sys.argv) > 3:
        refs = [json.loads(line) for line in open(sys.argv[3]) if line.strip()]
        print("\nPyTorch's CUDA-graph replay of the same ops (5 processes):\n")
        for op in refs[0]:
            for key in ("graph_ns", "graph_keep_last_ns"):
                xs = [r[op][key] for r in refs if key in r[op]]
                if xs:
                    print(f"- `{op}` {key}: {min(xs) / 1e3:.3f}–{max(xs) / 1e3:.3f} µs")

    same = [run_dir(k_dir, f"add_same{i}") for i in range(1, 5)]
    extra = [run_dir(k_dir, f"add_extra{i}") for i in range(1, 6)]
    more = [run_dir(k_dir, f"add_more{i}") for i in range(1, 6)]

    aa = [compare(exe, a, b) for a, b in itertools.permutations(same, 2)]
    print(f"\n### `add_1m` unchanged against itself ({len(aa)} ordered pairs of 4 runs)\n")
    print(f"- time: {tally(aa, 'time')}")
    print(f"- kernel time: {tally(aa, 'kernel')}; changes "
          + ", ".join(f"{r['kernel_change'] * 100:+.1f}%" for r in aa))
    print(f"- counters changed in {sum(1 for r in aa if r['counters'])} of {len(aa)}")

    ex = [compare(exe, s, e) for s in same for e in extra]
    flagged = [r for r in ex if any(c["counter"] == "kernels" and c["current"] > c["baseline"] for c in r["counters"] or [])]
    print(f"\n### A planted extra kernel per call ({len(ex)} comparisons: 4 baselines × 5 runs)\n")
    print(f"- counters flagged `+1 kernel per call` in {len(flagged)} of {len(ex)}; "
          f"runs flagged against every baseline: "
          f"{sum(1 for j in range(5) if all(r in flagged for r in ex[j::5]))} of 5")
    names = sorted({c.get("name", "") for r in ex for c in r["kernel_changes"] if c.get("change") == "new"})
    print(f"- new kernels named: {', '.join('`' + n[:70] + '…`' for n in names)}")
    print(f"- time: {tally(ex, 'time')}; kernel time: {tally(ex, 'kernel')}")

    mo = [compare(exe, s, m) for s in same for m in more]
    print(f"\n### 10% more elements ({len(mo)} comparisons: 4 baselines × 5 runs)\n")
    regressed = sum(1 for r in mo if r["kernel"] == "regressed")
    print(f"- kernel time regressed in {regressed} of {len(mo)} ({regressed / len(mo) * 100:.0f}%); "
          f"change {min(r['kernel_change'] for r in mo) * 100:+.1f}% to {max(r['kernel_change'] for r in mo) * 100:+.1f}%")
    print(f"- time (eager): {tally(mo, 'time')}; change "
          f"{min(r['time_change'] for r in mo) * 100:+.1f}% to {max(r['time_change'] for r in mo) * 100:+.1f}%")
    print(f"- counters: {sum(1 for r in mo if r['counters'])} of {len(mo)} changed "
          f"({', '.join(sorted({c['counter'] for r in mo for c in r['counters'] or []}))})")


if __name__ == "__main__":
    main()
