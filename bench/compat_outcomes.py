"""The outcomes of one client suite run against each target (bench/compat_*.sh).

Reads LOG/NAME.<target>.log (pytest -rA output) for the targets direct, lb and nutcracker and
writes, into LOG:
  NAME.tsv                   each test's outcome per target, side by side
  NAME_lb_failures.txt       tests that pass against the server and fail through lb, with
                             lb's reason
  NAME_lb_only_failures.txt  those of them that pass through nutcracker too

A test passed when its call passed: a teardown error after a passing call is pytest's own
line and does not turn the call into a failure; a setup error alone means it did not run.

Usage: compat_outcomes.py LOG NAME
"""
import collections
import re
import sys

TARGETS = ["direct", "lb", "nutcracker"]
RANK = {"PASSED": 0, "FAILED": 1, "ERROR": 2}
LINE = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS) (\S+)(?: - )?(.*)$")


def main(log, name):
    res = collections.defaultdict(dict)
    for target in TARGETS:
        with open(f"{log}/{name}.{target}.log", errors="replace") as f:
            for line in f:
                m = LINE.match(line.rstrip("\n"))
                if not m:
                    continue
                outcome, test, reason = m.groups()
                best = res[test].get(target, ("-",))[0]
                if RANK.get(outcome, 3) < RANK.get(best, 4):
                    res[test][target] = (outcome, reason)
    with open(f"{log}/{name}.tsv", "w") as f:
        f.write("test\t" + "\t".join(TARGETS) + "\n")
        for test in sorted(res):
            f.write(test + "\t" + "\t".join(res[test].get(t, ("-",))[0] for t in TARGETS) + "\n")
    with open(f"{log}/{name}_lb_failures.txt", "w") as every, \
         open(f"{log}/{name}_lb_only_failures.txt", "w") as only:
        for test in sorted(res):
            d, l, n = (res[test].get(t, ("-", "")) for t in TARGETS)
            if d[0] == "PASSED" and l[0] != "PASSED":
                every.write(f"{test}\t{l[0]}: {l[1]}\n")
                if n[0] == "PASSED":
                    only.write(f"{test}\t{l[0]}: {l[1]}\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
