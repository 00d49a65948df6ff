#!/usr/bin/env python3
"""Tables for docs/gpu-validation.md from scripts/gpu/processes-validation.sh's output.

Usage: analyse-processes.py RUNS_DIR [TODAY_WALL_S]

RUNS_DIR holds aa0.json (the run that saved baseline `main`), aa1..aa5.json (unchanged
code compared with it), slow1..slowN.json (device-bound matmuls with a planted 5%
slowdown) and times.txt. Prints: verdicts of the unchanged runs; the share of other
runs' figures inside each run's interval; the planted slowdown's verdicts; suite wall
time against TODAY_WALL_S (one process per benchmark, measured before rounds).
"""
import json
import pathlib
import sys
from collections import Counter, defaultdict

runs = pathlib.Path(sys.argv[1])
today = float(sys.argv[2]) if len(sys.argv) > 2 else None


def load(name):
    return json.loads((runs / f"{name}.json").read_text())


aa = [load(f"aa{i}") for i in range(6)]
slow = sorted(p.stem for p in runs.glob("slow*.json"))

# Per benchmark: each run's estimate and interval, processes, flags.
est = defaultdict(list)
for i, run in enumerate(aa):
    for b in run["benchmarks"]:
        s = b.get("summary") or {}
        kind = s.get("primary_kind")
        t = s.get(kind) if kind else None
        if not t:
            continue
        e = t["estimate"]
        est[b["name"]].append(
            (i, e["point"], e["lower"], e["upper"], t["processes"]["count"],
             t["processes"].get("between"), s.get("flags", []))
        )

print("## A/A: unchanged code, 5 runs against a baseline from a sixth\n")
print("| benchmark | processes | spread between | verdicts (5 runs) | changes |")
print("|---|---:|---:|---|---|")
false_reg = false_imp = total = 0
verdicts_by = defaultdict(list)
for run in aa[1:]:
    for b in run["benchmarks"]:
        c = b.get("comparison") or {}
        if c.get("status") == "compared":
            v = c["comparison"]["verdict"]
            verdicts_by[b["name"]].append((v, c["comparison"]["change"]["point"]))
            total += 1
            false_reg += v == "regressed"
            false_imp += v == "improved"
for name in sorted(est):
    rows = est[name]
    procs = sorted({r[4] for r in rows})
    spreads = [r[5] for r in rows if r[5] is not None]
    vs = verdicts_by.get(name, [])
    count = Counter(v for v, _ in vs)
    words = ", ".join(f"{n} {v.replace('_', ' ')}" for v, n in sorted(count.items()))
    changes = " ".join(f"{c * 100:+.1f}%" for _, c in vs)
    spread = f"{min(spreads) * 100:.1f}–{max(spreads) * 100:.1f}%" if spreads else "—"
    print(f"| {name} | {'/'.join(map(str, procs))} | {spread} | {words} | {changes} |")
print(f"\nFalse verdicts: {false_reg} regressed and {false_imp} improved of {total} comparisons.")

print("\n## Coverage: other runs' figures inside a run's 95% interval\n")
inside = pairs = 0
per = {}
for name, rows in sorted(est.items()):
    i_n = p_n = 0
    for a in rows:
        for b in rows:
            if a[0] == b[0]:
                continue
            p_n += 1
            i_n += a[2] <= b[1] <= a[3]
    per[name] = (i_n, p_n)
    inside += i_n
    pairs += p_n
print("| benchmark | inside | share |")
print("|---|---:|---:|")
for name, (i_n, p_n) in per.items():
    print(f"| {name} | {i_n} of {p_n} | {100 * i_n / max(p_n, 1):.0f}% |")
print(f"\nAll benchmarks: {inside} of {pairs} = {100 * inside / max(pairs, 1):.1f}%.")

print("\n## Planted 5% slowdown of the device-bound matmuls\n")
caught = compared = 0
rows = defaultdict(list)
for name in slow:
    for b in load(name)["benchmarks"]:
        c = b.get("comparison") or {}
        if c.get("status") != "compared":
            continue
        cmp = c["comparison"]
        rows[b["name"]].append((cmp["verdict"], cmp["change"]))
        compared += 1
        caught += cmp["verdict"] == "regressed"
print("| benchmark | verdicts | changes [90% CI] |")
print("|---|---|---|")
for name, vs in sorted(rows.items()):
    count = Counter(v for v, _ in vs)
    words = ", ".join(f"{n} {v.replace('_', ' ')}" for v, n in sorted(count.items()))
    ch = "; ".join(
        f"{e['point'] * 100:+.1f}% [{e['lower'] * 100:+.1f}, {e['upper'] * 100:+.1f}]" for _, e in vs
    )
    print(f"| {name} | {words} | {ch} |")
print(f"\nRegressed in {caught} of {compared} comparisons.")

print("\n## Suite wall time\n")
times = {}
for line in (runs / "times.txt").read_text().splitlines():
    name, _, code, _, ms = line.split()
    times[name] = int(ms) / 1000
walls = [times[f"aa{i}"] for i in range(6)]
print("Runs of the suite: " + ", ".join(f"{w:.1f} s" for w in walls))
mean = sum(walls) / len(walls)
if today:
    print(f"Mean {mean:.1f} s against {today:.1f} s with one process per benchmark: {mean / today:.2f}×.")
procs = [sum(b["summary"]["rounds"] for b in run["benchmarks"] if b.get("summary")) for run in aa]
print("Processes per run: " + ", ".join(map(str, procs)) + f" for {len(aa[0]['benchmarks'])} benchmarks.")
