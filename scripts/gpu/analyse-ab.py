#!/usr/bin/env python3
"""Tables for docs/gpu-validation.md's "ab" section, from scripts/gpu/ab-validation.sh's
output directory (the `ab` folder of $OUT, or the tarball unpacked):

* per run: each benchmark's verdict on time and kernel time, the paired change with
  its interval, and the per-process ratios' spread;
* unchanged code (self-*): how many comparisons were regressed or improved (target 0
  of >= 40), and the share of launch-bound ones called "no change" (target >= 80%);
* the planted head (plant-*): how often each planted benchmark was called regressed
  (targets >= 95%);
* wall time of ab against the plain run of the same suite (target <= 2.5x).

Several DIRs (one per GPU call) are read in turn and counted together.

Usage: analyse-ab.py DIR...
"""
import json
import math
import pathlib
import statistics
import sys

LAUNCH = {"launch/add_1m", "launch/sdpa/128", "launch/request_stream", "launch/scalar_readback", "launch/sdpa/512"}


def planted(bench):
    """What scripts/gpu/ab-plant.py changes: the launch-bound benchmarks and the matmuls."""
    return bench.startswith("launch/") or bench.startswith("matmul/")


root = None
times = {}


def runs(prefix):
    for p in sorted(root.glob(prefix + "*.json")):
        try:
            yield p.stem, json.loads(p.read_text())
        except json.JSONDecodeError:
            print(f"{p.stem}: no JSON summary (see {p.stem}.err)")


def rows(doc):
    for b in doc["benchmarks"]:
        c = b.get("comparison") or {}
        comp = c.get("comparison") or {}
        kernel = c.get("kernel") or {}
        yield b["name"], comp, kernel


def ratios(run_dir, bench_id):
    stem = bench_id.replace("/", "_")
    for f in pathlib.Path(run_dir).glob("runs/*/*.json"):
        if f.name == "manifest.json" or f.name == "comparison.json":
            continue
        rec = json.loads(f.read_text())
        if rec.get("id") != bench_id:
            continue
        return [math.exp(r["pairing"]["log_ratio"]) - 1 for r in rec["rounds"] if r.get("pairing")]
    return []


def pct(x):
    return f"{x * 100:+.1f}%"


def table(name, doc):
    print(f"\n{name} ({'paired' if (doc.get('ab') or {}).get('paired') else 'not paired'}; exit {doc['exit']['code']}, wall {times.get(name, (0, 0))[1] / 1000:.1f} s)")
    print("| benchmark | verdict | change [90%] | processes | per-process change (sd) | kernel time |")
    print("|---|---|---|---|---|---|")
    for bench, comp, kernel in rows(doc):
        if not comp:
            print(f"| `{bench}` | — | — | — | — | — |")
            continue
        ch = comp["change"]
        bid = bench.split("/", 1)[1]
        per = ratios(root / name, bid)
        sd = f"{statistics.stdev(per) * 100:.2f}%" if len(per) > 1 else "—"
        k = f"{kernel['verdict']} {pct(kernel['change']['point'])}" if kernel else "—"
        print(f"| `{bench}` | {comp['verdict']} | {pct(ch['point'])} [{pct(ch['lower'])}, {pct(ch['upper'])}] | {comp['current_processes']} | {', '.join(pct(x) for x in per)} ({sd}) | {k} |")


false, same, time_false, time_same, launch_same, launch_no_change = 0, 0, 0, 0, 0, 0
caught = {}
walls = []
for arg in sys.argv[1:]:
    root = pathlib.Path(arg)
    times = {}
    for line in (root / "times.txt").read_text().splitlines():
        parts = line.split()
        times[parts[0]] = (int(parts[2]), int(parts[4]))
    print(f"\n## {root}")
    for prefix in ["run-plain", "self-", "plant-"]:
        for name, doc in runs(prefix):
            if name == "run-plain":
                print(f"\nrun-plain: exit {doc['exit']['code']}, wall {times[name][1] / 1000:.1f} s")
                continue
            table(name, doc)
    # Unchanged code: every benchmark of a self- run, and the benchmarks a plant- run
    # leaves alone.
    for prefix in ["self-", "plant-"]:
        for name, doc in runs(prefix):
            for bench, comp, kernel in rows(doc):
                if prefix == "plant-" and planted(bench):
                    if comp:
                        hit = caught.setdefault(bench, [0, 0])
                        hit[0] += comp["verdict"] == "regressed"
                        hit[1] += 1
                    continue
                for c in (comp, kernel):
                    if c:
                        same += 1
                        false += c["verdict"] in ("regressed", "improved")
                if comp:
                    time_same += 1
                    time_false += comp["verdict"] in ("regressed", "improved")
                if comp and bench in LAUNCH:
                    launch_same += 1
                    launch_no_change += comp["verdict"] == "no_change"
    if "run-plain" in times and "self-default" in times:
        walls.append((times["self-default"][1], times["run-plain"][1]))

print(f"\n## All of {len(sys.argv) - 1} call(s)")
print(f"unchanged code: {false} regressed or improved of {same} comparisons (time and kernel time), "
      f"{time_false} of {time_same} on time; launch-bound time 'no change' {launch_no_change}/{launch_same} "
      f"({100 * launch_no_change / max(launch_same, 1):.0f}%)")
for bench, (hit, n) in sorted(caught.items()):
    print(f"planted {bench}: regressed in {hit}/{n}")
for ab_ms, plain_ms in walls:
    print(f"wall time: ab {ab_ms / 1000:.1f} s, plain run {plain_ms / 1000:.1f} s: {ab_ms / plain_ms:.2f}x")
