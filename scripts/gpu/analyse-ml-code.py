#!/usr/bin/env python3
"""Tables of scripts/gpu/ml-code-validation.sh's runs: per run, per benchmark, the
verdict on time, kernel time, counters and memory, the change with its interval,
the smallest detectable change, and whether the benchmark was paired, judged on
separate processes (and why) or missing. Then the counts the acceptance asks for.

Usage: analyse-ml-code.py DIR   (DIR holds the runs' JSON summaries)
"""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1])
PLANTED = {
    "train_step": "counters",       # one read-back (sync) per call added
    "big_batch_step": "time",       # 3.1% more rows
    "cached_lookup": "memory",      # a bounded cache of 64 KiB per call
}


def verdicts(b):
    c = b.get("comparison") or {}
    out = {"status": c.get("status", "none")}
    t = c.get("comparison") or {}
    out["time"] = t.get("verdict")
    out["change"] = t.get("change")
    out["detectable"] = t.get("detectable")
    out["note"] = t.get("note")
    out["reason"] = c.get("reason")
    k = c.get("kernel") or {}
    out["kernel"] = k.get("verdict")
    counters = c.get("counters")
    if counters is None:
        out["counters"] = None
    else:
        up = [x for x in counters if x.get("current", 0) > x.get("baseline", 0)]
        down = [x for x in counters if x.get("current", 0) < x.get("baseline", 0)]
        out["counters"] = "regressed" if up else ("improved" if down else "no_change")
        out["counter_changes"] = counters
    m = c.get("memory") or {}
    figs = m.get("figures") or []
    vs = [f.get("verdict") for f in figs]
    out["memory"] = (
        "regressed" if "regressed" in vs else "improved" if "improved" in vs
        else "no_change" if vs else None
    )
    out["memory_figures"] = figs
    return out


def pct(e):
    if not e:
        return "-"
    return f"{e['point']*100:+.2f}% [{e['lower']*100:+.2f}, {e['upper']*100:+.2f}]"


runs = sorted(p for p in root.glob("*.json") if p.stem.startswith(("ab-", "plain-")))
tally = {"aa_time_kernel": 0, "aa_false": [], "aa_memory": 0, "aa_memory_false": [],
         "missing": [], "fallbacks": [], "planted": {}}
for path in runs:
    try:
        doc = json.loads(path.read_text() or "{}")
    except json.JSONDecodeError as e:
        print(f"{path.name}: unreadable ({e})")
        continue
    name = path.stem
    print(f"\n== {name}: exit {doc.get('exit')}, {doc.get('elapsed_s', 0):.0f} s")
    aa = "self" in name or name == "plain-base"
    for m in (doc.get("comparison") or {}).get("missing", []):
        tally["missing"].append((name, m.get("id"), m.get("kind"), m.get("reason")))
        print(f"   missing: {m.get('id')} {m.get('kind')}: {m.get('reason')}")
    for b in doc.get("benchmarks", []):
        v = verdicts(b)
        bid = b["id"]
        note = v["note"] or ""
        if "separate processes" in note:
            tally["fallbacks"].append((name, bid, note))
        print(f"   {bid:16} {b['status']:7} time {str(v['time']):10} {pct(v['change']):34} "
              f"detect {'-' if v['detectable'] is None else format(v['detectable']*100, '.2f') + '%':7} "
              f"kernel {str(v['kernel']):10} counters {str(v['counters']):10} memory {str(v['memory'])}"
              + (f"\n{'':20}note: {note}" if note else "")
              + (f"\n{'':20}reason: {v['reason']}" if v['reason'] else ""))
        for f in v["memory_figures"]:
            if f.get("verdict") != "no_change":
                print(f"{'':20}memory {f['figure']}: {f['baseline']:.0f} -> {f['current']:.0f} "
                      f"(tolerance {f['tolerance']:.0f}, {f['basis']}): {f['verdict']}"
                      + (f" — {f['describe']}" if f.get('describe') else ""))
        for c in v.get("counter_changes") or []:
            print(f"{'':20}counter {c}")
        if name == "plain-base":
            continue
        # Unchanged code: every benchmark of an A/A run, and those a planted run
        # leaves alone (train_step keeps its time and memory: only a sync is added).
        unchanged = aa or bid not in PLANTED
        if unchanged:
            for metric in ("time", "kernel"):
                if v[metric] is not None:
                    tally["aa_time_kernel"] += 1
                    if v[metric] in ("regressed", "improved"):
                        tally["aa_false"].append((name, bid, metric, v[metric]))
            if v["memory"] is not None:
                tally["aa_memory"] += 1
                if v["memory"] != "no_change":
                    tally["aa_memory_false"].append((name, bid, v["memory"]))
        if not aa and bid in PLANTED:
            metric = PLANTED[bid]
            kind = "ab" if name.startswith("ab-") else "plain"
            tally["planted"].setdefault((bid, metric, kind), []).append(v[metric])
print("\n== acceptance")
print(f"unchanged code (A/A runs, and the benchmarks a planted run leaves alone): time and kernel comparisons: {tally['aa_time_kernel']}, false verdicts: "
      f"{len(tally['aa_false'])} {tally['aa_false']}")
print(f"unchanged code: memory comparisons: {tally['aa_memory']}, other than no change: "
      f"{len(tally['aa_memory_false'])} {tally['aa_memory_false']}")
print(f"missing evidence lines: {len(tally['missing'])}")
print(f"benchmarks judged on separate processes (fallbacks): {len(tally['fallbacks'])}")
for f in tally["fallbacks"]:
    print(f"   {f}")
for (bid, metric, kind), vs in sorted(tally["planted"].items()):
    hits = sum(1 for x in vs if x == "regressed")
    print(f"planted {bid} on {metric} ({kind}): regressed in {hits} of {len(vs)} {vs}")
