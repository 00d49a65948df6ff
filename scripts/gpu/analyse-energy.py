#!/usr/bin/env python3
"""Figures of scripts/gpu/energy-validation.sh from its run summaries (--format json)
and records: kernel vs device time per L2 regime, energy per call and its spread,
idle power, power-capped share, % of peak at the measured clock."""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1]


def us(ns):
    return f"{ns / 1e3:.1f} us" if ns else "-"


def est(s, kind):
    t = s.get(kind)
    return t["estimate"]["point"] if t else None


def records(run, bid):
    name = bid.replace("/", "_")
    for path in glob.glob(os.path.join(out, run, "**", "*.json"), recursive=True):
        try:
            with open(path) as f:
                r = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(r, dict) and r.get("id") == bid and "rounds" in r:
            yield path, r


for run in ("flush", "warm", "energy"):
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
        ratio = f"{ker / dev:.3f}" if dev and ker else "-"
        l2 = set()
        for _, r in records(run, bid):
            for rd in r["rounds"]:
                m = rd.get("measurement") or {}
                l2.add(("samples", m.get("l2")))
                l2.add(("kernel", (m.get("kernel") or {}).get("l2")))
        print(f"{bid}: device {us(dev)}, kernel {us(ker)}, kernel/device {ratio}, l2 {sorted(l2, key=str)}")
        e = s.get("energy")
        if e:
            pj = e["per_process_joules"]
            sd = statistics.stdev(pj) / statistics.mean(pj) if len(pj) > 1 else 0.0
            print(f"  energy {e['joules_per_call']:.4f} J/call, per process {[round(x, 4) for x in pj]} "
                  f"(process spread {100 * sd:.2f}%), window spread {100 * e['window_spread']:.2f}%, "
                  f"power {e['power_w']:.0f} W, idle {e.get('idle_w')} W, {e['windows']} windows of "
                  f"{e['window_s']:.3f} s, {e['steps']} steps")
        elif s.get("energy_unavailable"):
            print(f"  no energy: {s['energy_unavailable']}")
        pc = s.get("power_capped")
        if pc:
            print(f"  power-capped {100 * pc['share']:.0f}% of {pc['samples']} samples, limit {pc.get('power_limit_w')} W")
        pk = s.get("peak")
        if pk:
            print(f"  peak: {100 * pk['share']:.1f}% of {pk['peak_per_s'] / 1e12:.1f} T/s at {pk.get('measured_clock_mhz')} MHz "
                  f"({100 * pk['share_of_datasheet']:.1f}% of the data sheet's {pk['datasheet_peak_per_s'] / 1e12:.1f}); "
                  f"sm clock {s.get('sm_clock_mhz')}")
