#!/usr/bin/env python3
"""Tables of scripts/gpu/energy-accept.sh's runs (issue 38's energy acceptance), read
from the JSON summaries (docs/schema/run-summary.schema.json,
compare-summary.schema.json), never from terminal text:

1. joules per call and their 95% interval (relative) per benchmark per run, with the
   power, the idle power and the power-capped share, and whether the interval is
   within ±3%;
2. energy verdicts of the A/A comparisons, plain (`compare`) and `ab` separately, and
   the false ones (regressed or improved) among them;
3. the planted 10% more work: regressed on energy in how many `ab` runs of each
   benchmark (3 of 3 asked);
4. the power-capped benchmarks as the outputs name them (the summary's
   `power_capped`, the Markdown summary's `power-capped:` line).

Energy a run lacks (the CPU device, a GPU without an energy counter) is reported with
its reason, never as a verdict.

Usage: analyse-energy-accept.py DIR   (DIR: the bundle's energy-accept/ directory)
"""
import json
import math
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
BENCHMARKS = ("matmul_bf16_8192", "mlp_step", "matmul_4096")
# The acceptance asks for intervals within ±3% of these two.
INTERVAL_ASKED = ("matmul_bf16_8192", "mlp_step")
INTERVAL_LIMIT = 0.03
FALSE = ("regressed", "improved")
# Two-sided 95% quantiles of Student's t by degrees of freedom.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365,
        8: 2.306, 9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def t975(df):
    for d in sorted(T975, reverse=True):
        if df >= d:
            return T975[d]
    return float("nan")


def load(path):
    try:
        text = path.read_text()
    except OSError as e:
        return None, f"unreadable ({e})"
    if not text.strip():
        err = path.with_suffix(".err")
        tail = err.read_text().strip().splitlines()[-1:] if err.exists() else []
        return None, "empty" + (f": {tail[0]}" if tail else "")
    try:
        return json.loads(text), None
    except json.JSONDecodeError as e:
        return None, f"not JSON ({e})"


def number(name):
    m = re.search(r"-(\d+)$", name)
    return int(m.group(1)) if m else 0


def runs(prefix):
    return sorted(root.glob(f"{prefix}-*.json"), key=lambda p: number(p.stem))


def energy_interval(e):
    """The summary's own interval of joules per call when it has one (relative), else
    the 95% t-interval of the mean of the processes' log joules; and its source."""
    point = e.get("joules_per_call")
    for key, v in e.items():
        if isinstance(v, dict) and "lower" in v and "upper" in v and point:
            return v["lower"] / point - 1, v["upper"] / point - 1, f"summary `{key}`"
    xs = [x for x in e.get("per_process_joules") or [] if x and x > 0]
    if len(xs) < 2:
        return None, None, f"{len(xs)} process(es): no interval"
    logs = [math.log(x) for x in xs]
    mean = sum(logs) / len(logs)
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
    half = t975(len(logs) - 1) * sd / math.sqrt(len(logs))
    centre = math.exp(mean) / point if point else 1.0
    return centre * math.exp(-half) - 1, centre * math.exp(half) - 1, \
        f"t over {len(xs)} processes"


def pct(x, digits=2):
    return "-" if x is None else f"{x * 100:+.{digits}f}%"


def metric(comparison, name):
    """The comparison of one metric in a benchmark's comparison entry."""
    if not comparison:
        return None
    if name == "time":
        return comparison.get("comparison")
    return comparison.get(name) or (comparison.get("metrics") or {}).get(name)


def missing_energy(doc):
    out = {}
    for m in (doc.get("comparison") or {}).get("missing") or []:
        if m.get("metric") == "energy" or "energy" in (m.get("reason") or ""):
            out[m.get("id")] = f"{m.get('kind')}: {m.get('reason')}"
    return out


def other_clocks(doc):
    """The benchmarks whose two sides ran at other clocks, or of which one side ran
    power-capped and the other did not, as the comparison names them."""
    found = []

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "other_clocks" and isinstance(v, list):
                    found.extend(v)
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(doc.get("comparison") or {})
    return found


def describe(c):
    if not c:
        return "-"
    ch = c.get("change") or {}
    return (f"{c.get('verdict')} {pct(ch.get('point'))} [{pct(ch.get('lower'))}, "
            f"{pct(ch.get('upper'))}] threshold {pct(c.get('threshold'), 1)}"
            + (" paired" if c.get("paired") else ""))


def power_capped_lines(md_path):
    """The Markdown summary's power-capped lines, by benchmark."""
    lines = {}
    if md_path.exists():
        for line in md_path.read_text().splitlines():
            if "power-capped:" in line:
                for bid in BENCHMARKS:
                    if f"{bid}`" in line or f"/{bid}" in line:
                        lines[bid] = re.sub(r"^\s*[-*]\s*", "", line.strip())
    return lines


# 1. Joules per call.
print("== joules per call (95% interval of the processes, relative)")
print(f"{'run':14} {'benchmark':17} {'J/call':>9} {'interval':>18} {'±3%':4} {'proc':>4} "
      f"{'power':>7} {'idle':>7} {'windows':>7} {'w.spread':>8} power-capped")
figures = {}
capped_named = {}
absent = []
for path in runs("plain") + runs("ab-plant") + runs("ab-self"):
    doc, why = load(path)
    name = path.stem
    if doc is None:
        print(f"{name:14} {why}")
        continue
    md = power_capped_lines(path.with_suffix(".md"))
    for b in doc.get("benchmarks", []):
        bid, s = b["id"], b.get("summary") or {}
        e = s.get("energy")
        pc = s.get("power_capped") or {}
        capped = (f"{pc.get('share', 0) * 100:.0f}% of {pc.get('samples')} at "
                  f"{pc.get('power_limit_w')} W" if pc else "-")
        if pc.get("share", 0) > 0:
            capped_named.setdefault(bid, []).append(
                (name, pc["share"], md.get(bid, "no `power-capped:` line in the Markdown")))
        if not e:
            reason = s.get("energy_unavailable") or (
                "failed: " + str(s.get("failure")) if b.get("status") == "failed" else
                "no energy in the summary")
            absent.append((name, bid, reason))
            print(f"{name:14} {bid:17} {'absent':>9}  {reason}")
            continue
        lo, hi, source = energy_interval(e)
        within = None if lo is None else max(-lo, hi) <= INTERVAL_LIMIT
        if name.startswith("plain"):
            figures.setdefault(bid, []).append((name, e["joules_per_call"], lo, hi, within))
        print(f"{name:14} {bid:17} {e['joules_per_call']:9.4f} "
              f"{'[' + pct(lo) + ', ' + pct(hi) + ']':>18} "
              f"{'-' if within is None else 'yes' if within else 'NO':4} "
              f"{len(e.get('per_process_joules') or []):4} {e.get('power_w', 0):6.0f}W "
              f"{(e.get('idle_w') or 0):6.1f}W {e.get('windows', 0):7} "
              f"{pct(e.get('window_spread'), 1):>8} {capped}"
              + ("" if source.startswith("summary") else f"  ({source})"))

# 2. A/A comparisons.
print("\n== A/A: energy verdicts on unchanged code")
aa = {}
for kind, paths in (("plain", runs("aa-plain")), ("ab", runs("ab-self"))):
    tally = aa.setdefault(kind, {"compared": 0, "false": [], "verdicts": {}, "absent": [],
                                 "capped_sides": []})
    for path in paths:
        doc, why = load(path)
        if doc is None:
            print(f"{path.stem:14} {why}")
            continue
        gone = missing_energy(doc)
        for o in other_clocks(doc):
            if o.get("power_capped"):
                tally["capped_sides"].append((path.stem, o.get("id"), o["power_capped"]))
        for b in doc.get("benchmarks", []):
            bid = b["id"]
            c = metric(b.get("comparison"), "energy")
            t = metric(b.get("comparison"), "time")
            if c is None:
                reason = gone.get(bid) or "no energy comparison"
                tally["absent"].append((path.stem, bid, reason))
                print(f"{path.stem:14} {bid:17} energy absent: {reason}; time {describe(t)}")
                continue
            tally["compared"] += 1
            v = c.get("verdict")
            tally["verdicts"][v] = tally["verdicts"].get(v, 0) + 1
            if v in FALSE:
                tally["false"].append((path.stem, bid, v))
            print(f"{path.stem:14} {bid:17} energy {describe(c)}; time {describe(t)}")

# 3. Planted.
print("\n== planted 10% more work: energy verdicts of `ab` base vs planted")
planted = {bid: [] for bid in BENCHMARKS}
for path in runs("ab-plant"):
    doc, why = load(path)
    if doc is None:
        print(f"{path.stem:14} {why}")
        continue
    gone = missing_energy(doc)
    for b in doc.get("benchmarks", []):
        bid = b["id"]
        c = metric(b.get("comparison"), "energy")
        t = metric(b.get("comparison"), "time")
        planted.setdefault(bid, []).append(c.get("verdict") if c else None)
        print(f"{path.stem:14} {bid:17} energy "
              + (describe(c) if c else f"absent: {gone.get(bid) or 'no energy comparison'}")
              + f"; time {describe(t)}")

print("\n== acceptance")
for bid in INTERVAL_ASKED:
    fs = figures.get(bid, [])
    ok = [f for f in fs if f[4]]
    js = [f[1] for f in fs]
    sd = (math.sqrt(sum((math.log(j) - sum(map(math.log, js)) / len(js)) ** 2 for j in js)
                    / (len(js) - 1)) if len(js) > 1 else None)
    print(f"{bid}: J/call in {len(fs)} plain runs"
          + (f" {min(js):.4f}-{max(js):.4f}" if js else "")
          + (f" (sd between runs {sd * 100:.2f}%)" if sd is not None else "")
          + f"; interval within ±3% in {len(ok)} of {len(fs)}")
total_compared = total_false = 0
for kind in ("plain", "ab"):
    t = aa.get(kind, {"compared": 0, "false": [], "verdicts": {}, "absent": [],
                      "capped_sides": []})
    total_compared += t["compared"]
    total_false += len(t["false"])
    print(f"A/A {kind}: {t['compared']} energy comparisons {t['verdicts']}, false verdicts "
          f"{len(t['false'])} {t['false']}; energy absent in {len(t['absent'])}")
    for name, bid, sides in t.get("capped_sides", []):
        print(f"   {name} {bid}: one side power-capped, the other not {sides}")
print(f"A/A plain and ab: {total_false} false energy verdicts in {total_compared} comparisons"
      f" ({'meets' if total_false == 0 and total_compared >= 30 else 'does NOT meet'}"
      " 0 in ≥ 30)")
for bid, vs in planted.items():
    hits = sum(1 for v in vs if v == "regressed")
    print(f"planted {bid}: regressed on energy in {hits} of {len(vs)} `ab` runs {vs}"
          + (" (3 of 3 met)" if hits >= 3 and hits == len(vs) else ""))
if capped_named:
    for bid, rows in capped_named.items():
        shares = ", ".join(f"{n} {s * 100:.0f}%" for n, s, _ in rows)
        print(f"power-capped: {bid} in {len(rows)} runs ({shares}); Markdown: {rows[0][2]}")
else:
    print("power-capped: no benchmark ran power-capped in any run")
if absent:
    reasons = sorted({r for _, _, r in absent})
    print(f"energy absent from {len(absent)} benchmark results: {reasons}")
