#!/usr/bin/env python3
"""Figures of scripts/gpu/flush-validation.sh from its run summaries (--format json)
and records: kernel/device time per benchmark and per process, with and without
--flush-l2, and the clock each timer ran at (the samples' clock reads against the
paced replays' kernel.clock), so a gap can be put down to L2, dispatch or clock."""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1]
TARGET = 0.05


def us(ns):
    return f"{ns / 1e3:.1f} us" if ns else "-"


def est(s, kind):
    t = s.get(kind)
    return t["estimate"]["point"] if t else None


def records(run, bid):
    """The record of `bid` in `run` (the run directory holds copies: the first found)."""
    for path in sorted(glob.glob(os.path.join(out, run, "**", "*.json"), recursive=True)):
        try:
            with open(path) as f:
                r = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(r, dict) and r.get("id") == bid and "rounds" in r:
            yield r
            return


def sample_clock(m):
    clocks = [s["clock"] for s in m.get("samples", []) if s.get("clock")]
    if not clocks:
        return "no clock"
    mhz = statistics.mean(c["sm_mhz"] for c in clocks)
    capped = sum(1 for c in clocks if c.get("power_capped")) / len(clocks)
    return f"{mhz:.0f} MHz, {100 * capped:.0f}% capped of {len(clocks)}"


def replay_clock(k):
    c = k.get("clock")
    if not c:
        return "no clock (replays back to back, or no telemetry)"
    return (f"{c['sm_mhz_mean']:.0f} MHz ({c['sm_mhz_min']}-{c['sm_mhz_max']}), "
            f"{100 * c['power_capped'] / c['reads']:.0f}% capped of {c['reads']}")


verdicts = []
for run in ("flush", "warm"):
    path = os.path.join(out, run + ".json")
    if not os.path.exists(path):
        print(f"{run}: no summary")
        continue
    with open(path) as f:
        doc = json.load(f)
    print(f"== {run}")
    for b in doc.get("benchmarks", []):
        s = b.get("summary") or {}
        bid = b["id"]
        dev, ker = est(s, "device"), est(s, "kernel")
        ratio = ker / dev if dev and ker else None
        kc = s.get("kernel_clock")
        kc_text = (f"replays {kc['sm_clock_mhz']:.0f} MHz, {100 * kc['power_capped_share']:.0f}% capped"
                   if kc else "replays: no clock")
        pc = s.get("power_capped") or {}
        print(f"{bid}: device {us(dev)}, kernel {us(ker)}, kernel/device "
              f"{f'{ratio:.3f}' if ratio else '-'}; samples {s.get('sm_clock_mhz')} MHz, "
              f"{100 * pc.get('share', 0):.0f}% capped; {kc_text}; flags {s.get('flags')}")
        if run == "flush" and ratio:
            verdicts.append((bid, ratio, abs(ratio - 1) <= TARGET))
        for r in records(run, bid):
            for i, rd in enumerate(r["rounds"]):
                m = rd.get("measurement") or {}
                k = m.get("kernel") or {}
                devs = [x["device_ns"] / x["iters"] for x in m.get("samples", [])
                        if x.get("device_ns") is not None and not (x.get("clock") or {}).get("throttled")]
                walls = [x["wall_ns"] / x["iters"] for x in m.get("samples", [])]
                kers = k.get("samples_ns") or []
                if not devs or not kers:
                    print(f"  process {i}: device {len(devs)} samples, kernel {len(kers)} samples")
                    continue
                d, kk = statistics.median(devs), statistics.median(kers)
                print(f"  process {i}: device {us(d)} (wall {us(statistics.median(walls))}, "
                      f"{len(devs)} samples; {sample_clock(m)}), kernel {us(kk)} "
                      f"({min(kers) / 1e3:.1f}-{max(kers) / 1e3:.1f} us; {replay_clock(k)}), "
                      f"kernel/device {kk / d:.3f}, l2 samples {m.get('l2')} kernel {k.get('l2')}")
print("== --flush-l2 target: kernel/device within 5%")
for bid, ratio, ok in verdicts:
    print(f"{bid}: {ratio:.3f} {'within' if ok else 'OUTSIDE'}")
