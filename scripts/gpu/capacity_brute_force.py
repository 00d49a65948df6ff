#!/usr/bin/env python3
"""Brute force for a capacity search: probes a capacity benchmark at many sizes with
the harness itself (one fresh process per size, as the search does) and compares with
the search's result.

* largest size: every size in steps of 0.25% over [0.97, 1.03] x the search's max;
* per-item bytes: least squares of peak allocated memory over 10 sizes evenly spaced
  from the declared size to 0.9 x the search's max.

usage: capacity_brute_force.py EXE NAME RESULT.json FRACTION OUT.json
"""
import json
import os
import subprocess
import sys
import tempfile

exe, name, result_path, fraction, out_path = sys.argv[1:6]
result = json.load(open(result_path))


def probe(size):
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, GPUBENCH_RECORD_DIR=d)
        subprocess.run(
            [exe, "--exact", name, "--include-ignored", "--capacity-probe", str(size),
             "--memory-fraction", fraction],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
        files = [f for f in os.listdir(d) if f.endswith(".json")]
        if not files:
            raise SystemExit(f"probe {size} wrote no record")
        rec = json.load(open(os.path.join(d, files[0])))
        rnd = rec["rounds"][0]
        if rnd.get("failure"):
            if rnd["failure"]["kind"] != "out_of_memory":
                raise SystemExit(f"probe {size} failed: {rnd['failure']['message'][:300]}")
            return None
        return rnd["measurement"]["memory"]["peak_allocated_bytes"]


top = result["max_size"]
step = max(1, round(top * 0.0025))
scan = []
size = int(top * 0.97)
while size <= top * 1.03:
    peak = probe(size)
    scan.append({"size": size, "fits": peak is not None, "peak_allocated_bytes": peak})
    print(f"scan {size}: {'fits' if peak is not None else 'out of memory'}", flush=True)
    size += step
fitting = [s["size"] for s in scan if s["fits"]]
brute_max = max(fitting) if fitting else None
first_fail_after = min((s["size"] for s in scan if not s["fits"] and brute_max and s["size"] > brute_max), default=None)

start = result["start"]
sizes = [int(start + i * (0.9 * top - start) / 9) for i in range(10)]
points = []
for s in sizes:
    peak = probe(s)
    print(f"fit {s}: {peak}", flush=True)
    if peak is not None:
        points.append((s, peak))
n = len(points)
mx = sum(p[0] for p in points) / n
my = sum(p[1] for p in points) / n
slope = sum((p[0] - mx) * (p[1] - my) for p in points) / sum((p[0] - mx) ** 2 for p in points)
fixed = my - slope * mx

search_slope = result["fit"]["per_item_bytes"]
bracket = (result.get("first_failing") or top) - top
summary = {
    "search_max_size": top,
    "search_first_failing": result.get("first_failing"),
    "search_probes": len(result["probes"]),
    "bisection_step": bracket,
    "brute_max_size": brute_max,
    "brute_first_failing_after": first_fail_after,
    "brute_scan_step": step,
    "max_size_difference": None if brute_max is None else brute_max - top,
    "within_one_bisection_step": brute_max is not None and abs(brute_max - top) <= max(bracket, step),
    "search_per_item_bytes": search_slope,
    "brute_per_item_bytes": slope,
    "brute_fixed_bytes": fixed,
    "per_item_relative_difference": abs(search_slope - slope) / slope,
    "scan": scan,
    "fit_points": points,
}
json.dump(summary, open(out_path, "w"), indent=2)
print(json.dumps({k: v for k, v in summary.items() if k not in ("scan", "fit_points")}, indent=2))
