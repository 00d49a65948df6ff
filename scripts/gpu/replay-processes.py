#!/usr/bin/env python3
"""Replays the final process policy on the records of scripts/gpu/processes-validation.sh.

Usage: replay-processes.py RUNS_DIR OUT_DIR [CARGO_GPUBENCH]

The validation ran host-bound benchmarks in 4 processes; the final policy runs them
in 3 (device-bound ones are unchanged). Processes are independent, so keeping the
first 3 rounds of each host-bound record is what a run with the final policy would
have stored. Writes OUT_DIR/aa0..aa5 (the truncated runs), OUT_DIR/aaN.json (each
run compared with aa0, and aa0 with aa1, by CARGO_GPUBENCH's `compare`), copies the
planted-slowdown summaries (device-bound only, so unchanged) and times.txt, and
prints each run's wall time projected from its processes' recorded durations.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

runs, out = sys.argv[1], sys.argv[2]
exe = sys.argv[3] if len(sys.argv) > 3 else "cargo-gpubench"
os.makedirs(out, exist_ok=True)
for i in range(6):
    src = glob.glob(f"{runs}/aa{i}/runs/*")[0]
    dst = f"{out}/aa{i}"
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    shutil.rmtree(f"{dst}/baseline", ignore_errors=True)
    if os.path.exists(f"{dst}/comparison.json"):
        os.remove(f"{dst}/comparison.json")
    manifest = json.load(open(f"{dst}/manifest.json"))
    kept_s = spent_s = 0.0
    for b in manifest["benchmarks"]:
        path = f"{dst}/{b['record']}"
        r = json.load(open(path))
        ms = [x["measurement"] for x in r["rounds"] if x.get("measurement")]
        device = sum("device_bound" in m.get("flags", []) for m in ms)
        n = len(r["rounds"])
        if not (ms and 2 * device > len(ms)):
            r["rounds"] = r["rounds"][:3]
            json.dump(r, open(path, "w"), indent=2)
        spent_s += b["duration_s"]
        kept_s += b["duration_s"] * len(r["rounds"]) / n
    wall = [
        int(line.split()[-1]) / 1000
        for line in open(f"{runs}/times.txt")
        if line.startswith(f"aa{i} ")
    ][0]
    print(f"aa{i}: measured {wall:.1f} s; projected {wall - spent_s + kept_s:.1f} s")


def compare(base, current, dest):
    with open(f"{out}/{dest}.json", "w") as f:
        subprocess.run(
            [exe, "compare", f"{out}/{base}", f"{out}/{current}", "--fail-on", "never",
             "--format", "json"],
            stdout=f, check=True)


compare("aa1", "aa0", "aa0")
for i in range(1, 6):
    compare("aa0", f"aa{i}", f"aa{i}")
for f in glob.glob(f"{runs}/slow*.json") + [f"{runs}/times.txt"]:
    shutil.copy(f, out)
