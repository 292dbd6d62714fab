#!/usr/bin/env python3
"""Instructions per request by function, from bench/request_callgrind.sh's files.

Each function's self cost (instructions executed in it, not in what it calls; inlined code
counts where it was inlined) over the run's requests (FILE's sibling .requests). With one
file: the top functions. With two or more: side by side, the largest moves from the first
file first, and the totals.

usage: bench/callgrind_per_request.py FILE.callgrind [FILE.callgrind ...] [--top N] [--min IR]
                                      [--group NAME=REGEX ...]
With --group, functions are summed into the named groups (the first whose regex matches the
function's name, searched; the rest into "other") and the table shows the groups.
"""
import argparse
import collections
import os
import re


def self_costs(path):
    """Self Ir per function name in one callgrind out file (name compression resolved)."""
    names = {}
    costs = collections.Counter()
    fn = None
    skip_next = False   # the cost line after calls= is the call's inclusive cost

    def name(kind, s):
        m = re.match(r"\((\d+)\)(?: (.*))?", s)
        if not m:
            return s
        key = (kind, m.group(1))
        if m.group(2) is not None:
            names[key] = m.group(2)
        return names.get(key, s)

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if line.startswith("fn="):
                fn = name("fn", line[3:])
            elif line.startswith("cfn="):
                name("fn", line[4:])
            elif line.startswith(("ob=", "cob=")):
                name("ob", line.split("=", 1)[1])
            elif line.startswith(("fl=", "fi=", "fe=", "cfi=", "cfl=")):
                name("fl", line.split("=", 1)[1])
            elif line.startswith("calls="):
                skip_next = True
            elif line[0].isdigit() or line[0] in "+-*":
                parts = line.split()
                if len(parts) < 2:
                    continue
                if skip_next:
                    skip_next = False
                    continue
                costs[fn] += int(parts[1])
    return costs


def per_request(path):
    requests = int(open(re.sub(r"\.callgrind$", "", path) + ".requests").read().split()[0])
    return {f: c / requests for f, c in self_costs(path).items()}, requests


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--min", type=float, default=1.5, help="Ir/req of change below which a row is left out")
    ap.add_argument("--group", action="append", default=[], help="NAME=REGEX")
    a = ap.parse_args()
    runs = [per_request(p) for p in a.files]
    if a.group:
        groups = [(g.split("=", 1)[0], re.compile(g.split("=", 1)[1])) for g in a.group]
        summed_runs = []
        for costs, requests in runs:
            summed = collections.Counter()
            for f, v in costs.items():
                summed[next((n for n, rx in groups if rx.search(f)), "other")] += v
            summed_runs.append((dict(summed), requests))
        runs = summed_runs
    labels = [os.path.basename(p).removesuffix(".callgrind") for p in a.files]
    totals = [sum(r[0].values()) for r in runs]
    get = lambda i, f: runs[i][0].get(f, 0.0)
    funcs = set().union(*(r[0] for r in runs))
    if len(runs) == 1:
        rows = sorted(funcs, key=lambda f: -get(0, f))[: a.top]
        print(f"| function | {labels[0]} Ir/req |\n|---|---|")
        for f in rows:
            print(f"| {f[:100]} | {get(0, f):.1f} |")
        print(f"| **all** ({runs[0][1]} requests) | **{totals[0]:.0f}** |")
        return
    last = len(runs) - 1
    rows = sorted(funcs, key=lambda f: -abs(get(last, f) - get(0, f)) if f != "other" else 0)
    print("| function | " + " | ".join(f"{l} Ir/req" for l in labels) + f" | {labels[last]} - {labels[0]} |")
    print("|---|" + "---|" * (len(runs) + 1))
    shown = 0
    for f in rows:
        d = get(last, f) - get(0, f)
        if abs(d) < a.min and f != "other":
            continue
        print(f"| {f[:100]} | " + " | ".join(f"{get(i, f):.1f}" for i in range(len(runs))) + f" | {d:+.1f} |")
        shown += 1
        if shown >= a.top:
            break
    print("| **all** | " + " | ".join(f"**{t:.0f}**" for t in totals) + f" | **{totals[last] - totals[0]:+.0f}** |")
    print("\nrequests: " + ", ".join(f"{l} {r[1]}" for l, r in zip(labels, runs)))


if __name__ == "__main__":
    main()
