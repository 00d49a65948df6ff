#!/usr/bin/env python3
"""Counts what scripts/gpu/memory-validation.sh found: the planted leak's growth per
call and memory verdict in each of its runs, and the memory verdicts of unchanged
code over the example suite's pairwise comparisons. Usage: analyse-memory.py DIR."""
import json
import os
import sys

PLANTED = 64 * 1024


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"{os.path.basename(path)}: unreadable ({e})")
        return None


def memory_verdict(outcome):
    figures = (outcome or {}).get("memory", {}).get("figures")
    if not figures:
        return None
    verdicts = [f["verdict"] for f in figures]
    if "regressed" in verdicts:
        return "regressed"
    if "improved" in verdicts:
        return "improved"
    return "no_change"


def main(d):
    ok = True
    print("planted leak (one 64 KiB tensor per call) against `before-leak`:")
    flagged = 0
    for i in range(1, 6):
        doc = load(os.path.join(d, f"leak{i}.json"))
        b = (doc or {}).get("benchmarks", [{}])[0]
        g = (b.get("summary") or {}).get("memory_growth") or {}
        per_call = g.get("per_call_bytes")
        verdict = memory_verdict(b.get("comparison"))
        within = per_call is not None and abs(per_call / PLANTED - 1) <= 0.10
        hit = bool(g.get("holds")) and verdict == "regressed" and within
        flagged += hit
        peaks = {
            f["figure"]: (f["baseline"], f["current"])
            for f in ((b.get("comparison") or {}).get("memory") or {}).get("figures", [])
        }
        print(
            f"  leak{i}: growth {per_call} B/call per process {g.get('per_process_bytes')}"
            f" over {g.get('calls')} calls, holds={g.get('holds')}, memory {verdict},"
            f" peak allocated {peaks.get('peak_allocated')}"
        )
    print(f"  flagged with growth within 10% of {PLANTED} B: {flagged} of 5")
    ok &= flagged == 5
    doc = load(os.path.join(d, "leaking-ignored.json"))
    for b in (doc or {}).get("benchmarks", []):
        g = (b.get("summary") or {}).get("memory_growth") or {}
        print(f"  {b['id']} (--ignored): growth {g.get('per_call_bytes')} B/call, holds={g.get('holds')}")

    print("unchanged code, the example suite compared pairwise:")
    counts = {}
    other = []
    held = []
    for name in sorted(os.listdir(d)):
        if name.startswith("suite") and name.endswith(".json"):
            for b in (load(os.path.join(d, name)) or {}).get("benchmarks", []):
                g = (b.get("summary") or {}).get("memory_growth") or {}
                if g.get("holds"):
                    held.append(f"{name}: {b['id']} {g.get('per_call_bytes')}")
        if not (name.startswith("compare-") and name.endswith(".json")):
            continue
        doc = load(os.path.join(d, name))
        for b in (doc or {}).get("benchmarks", []):
            v = memory_verdict(b.get("comparison"))
            counts[v] = counts.get(v, 0) + 1
            if v != "no_change":
                other.append(f"{name}: {b['id']} {v} {json.dumps((b.get('comparison') or {}).get('memory'))}")
    total = sum(counts.values())
    print(f"  memory verdicts over {total} comparisons: {counts}")
    for line in other:
        print("  not no change:", line)
    for line in held:
        print("  holds memory per call (unchanged code):", line)
    compared = counts.get("no_change", 0)
    ok &= compared >= 30 and compared == total and not held
    print("PASS" if ok else "FAIL")


main(sys.argv[1])
