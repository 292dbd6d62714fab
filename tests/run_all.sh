#!/usr/bin/env bash
# Runs every test binary under BUILD/tests and ends with one line "N passed, N failed" summed
# over all of them. A binary that crashes or times out before writing its report counts as one
# failure, so a broken binary can never read as green.
set -u
build=${1:-build}
passed=0; failed=0; status=0
report_dir=$(mktemp -d)
trap 'rm -rf "$report_dir"' EXIT
for bin in "$build"/tests/*_tests; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  xml="$report_dir/$name.xml"
  echo "=== $name"
  timeout --kill-after=10 "${LB_TEST_TIMEOUT:-900}" "$bin" --gtest_output="xml:$xml" ${GTEST_ARGS:-}
  rc=$?
  if [ -s "$xml" ]; then
    head=$(grep -m1 '<testsuites' "$xml")
    t=$(sed -n 's/.* tests="\([0-9]*\)".*/\1/p' <<<"$head")
    f=$(sed -n 's/.* failures="\([0-9]*\)".*/\1/p' <<<"$head")
    e=$(sed -n 's/.* errors="\([0-9]*\)".*/\1/p' <<<"$head")
    d=$(sed -n 's/.* disabled="\([0-9]*\)".*/\1/p' <<<"$head")
    s=$(grep -c '<skipped' "$xml")
    bad=$((f + e))
    passed=$((passed + t - d - s - bad)); failed=$((failed + bad))
    [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ] && { echo "$name exited $rc"; failed=$((failed + 1)); }
  else
    echo "$name died (exit $rc) before writing its report"
    failed=$((failed + 1))
  fi
  [ "$rc" -ne 0 ] && status=1
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$status" -eq 0 ]
