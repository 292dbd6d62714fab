#!/usr/bin/env python3
"""CPU per request by symbol from `perf record` files of bench/request_cpu.sh (PERF_DIR).

Each build's LABEL.N.data files (cpu-clock samples of the lb process under one wrk run) and
LABEL.N.requests (that run's request count) are summed: a symbol's ns per request is the
CPU time its samples stand for (perf's period, ns of cpu-clock) over the requests. Prints a
markdown table, builds side by side, the symbols that moved most first.

usage: bench/perf_per_request.py PERF_DIR LABEL [LABEL ...] [--top N] [--min NS]
                                   [--group NAME=REGEX ...]
With --group, symbols are summed into the named groups (the first whose regex matches the
symbol, searched; the rest by dso) and the table shows the groups instead of symbols.
"""
import argparse
import collections
import glob
import os
import re
import subprocess
import sys


def load(perf_dir, label):
    per_sym = collections.Counter()
    dso_of = {}
    requests = 0
    for data in sorted(glob.glob(os.path.join(perf_dir, f"{label}.*.data"))):
        req_file = data[: -len(".data")] + ".requests"
        requests += int(open(req_file).read().split()[0])
        out = subprocess.run(
            ["perf", "report", "-i", data, "--stdio", "--no-children", "--sort", "dso,sym",
             "-F", "period,dso,sym", "-g", "none"],
            capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            m = re.match(r"\s*(\d+)\s+(\S+)\s+\[(.)\]\s+(.*?)\s*$", line)
            if not m:
                continue
            period, dso, _, sym = m.groups()
            per_sym[sym] += int(period)
            dso_of[sym] = dso
    if requests == 0:
        sys.exit(f"no requests recorded for {label} in {perf_dir}")
    return {s: p / requests for s, p in per_sym.items()}, dso_of, requests


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("perf_dir")
    ap.add_argument("labels", nargs="+")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--min", type=float, default=20.0, help="ns/req below which a row is left out")
    ap.add_argument("--group", action="append", default=[], help="NAME=REGEX")
    a = ap.parse_args()
    data = {l: load(a.perf_dir, l) for l in a.labels}
    if a.group:
        groups = [(g.split("=", 1)[0], re.compile(g.split("=", 1)[1])) for g in a.group]
        for l in a.labels:
            per_sym, dso_of, requests = data[l]
            summed = collections.Counter()
            for sym, v in per_sym.items():
                name = next((n for n, rx in groups if rx.search(sym)), None)
                summed[name or f"other in {os.path.basename(dso_of[sym])}"] += v
            data[l] = (dict(summed), {k: "" for k in summed}, requests)
    syms = set()
    dso_of = {}
    for l in a.labels:
        syms |= set(data[l][0])
        dso_of.update(data[l][1])
    first, last = a.labels[0], a.labels[-1]
    get = lambda l, s: data[l][0].get(s, 0.0)
    totals = {l: sum(data[l][0].values()) for l in a.labels}
    print("| symbol | dso | " + " | ".join(f"{l} ns/req" for l in a.labels) +
          f" | {last} - {first} |")
    print("|---|---|" + "---|" * len(a.labels) + "---|")
    rows = sorted(syms, key=lambda s: -abs(get(last, s) - get(first, s)))
    shown = 0
    for s in rows:
        if max(get(l, s) for l in a.labels) < a.min:
            continue
        print(f"| {s[:90]} | {os.path.basename(dso_of.get(s, ''))} | " +
              " | ".join(f"{get(l, s):.0f}" for l in a.labels) +
              f" | {get(last, s) - get(first, s):+.0f} |")
        shown += 1
        if shown >= a.top:
            break
    print("| **all** | | " + " | ".join(f"**{totals[l]:.0f}**" for l in a.labels) +
          f" | **{totals[last] - totals[first]:+.0f}** |")
    print()
    for l in a.labels:
        by_dso = collections.Counter()
        for s, v in data[l][0].items():
            by_dso[os.path.basename(dso_of[s])] += v
        print(f"{l}: {data[l][2]} requests; ns/req by dso: " +
              ", ".join(f"{d} {v:.0f}" for d, v in by_dso.most_common(6)))


if __name__ == "__main__":
    main()
