#!/usr/bin/env bash
# Runs every test binary under BUILD/tests and ends with one line "N passed, N failed" summed
# over all of them. A binary (or shard) that crashes or times out before writing its report
# counts as one failure, so a broken binary can never read as green.
#
# integration_tests runs as LB_TEST_SHARDS (default 3) gtest shards side by side: its tests
# spend most of their time waiting on real processes and timeouts, not on the CPU, and each
# test starts its own processes on ports of its own (port 0 or a free one), so shards do not
# share anything. Each shard's output is printed whole when it ends, in shard order.
set -u
build=${1:-build}
shards=${LB_TEST_SHARDS:-3}
passed=0; failed=0; status=0
report_dir=$(mktemp -d)
trap 'rm -rf "$report_dir"' EXIT

# tally NAME XML RC: adds one report's counts (or one failure when there is none).
tally() {
  local name=$1 xml=$2 rc=$3 head t f e d s bad
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
}

run() {   # BIN XML [env...]: the binary under the per-binary timeout
  local bin=$1 xml=$2; shift 2
  env "$@" timeout --kill-after=10 "${LB_TEST_TIMEOUT:-900}" "$bin" --gtest_output="xml:$xml" \
    ${GTEST_ARGS:-}
}

for bin in "$build"/tests/*_tests; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  if [ "$name" != integration_tests ] || [ "$shards" -le 1 ]; then
    echo "=== $name"
    run "$bin" "$report_dir/$name.xml"
    tally "$name" "$report_dir/$name.xml" $?
    continue
  fi
  pids=()
  for i in $(seq 0 $((shards - 1))); do
    run "$bin" "$report_dir/$name.$i.xml" GTEST_TOTAL_SHARDS="$shards" GTEST_SHARD_INDEX="$i" \
      >"$report_dir/$name.$i.log" 2>&1 &
    pids+=($!)
  done
  for i in $(seq 0 $((shards - 1))); do
    wait "${pids[$i]}"; rc=$?
    echo "=== $name, shard $((i + 1)) of $shards"
    cat "$report_dir/$name.$i.log"
    tally "$name shard $((i + 1))" "$report_dir/$name.$i.xml" "$rc"
  done
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$status" -eq 0 ]
