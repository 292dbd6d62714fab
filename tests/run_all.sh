#!/usr/bin/env bash
# Runs every test binary under BUILD/tests and ends with one line "N passed, N failed" summed
# over all of them. A binary (or shard) that crashes or times out before writing its report
# counts as one failure, so a broken binary can never read as green.
#
# integration_tests runs as LB_TEST_SHARDS (default 3) gtest shards side by side, and beside
# unit_tests: its tests spend most of their time waiting on real processes and timeouts, not
# on the CPU, and each test starts its own processes on ports of its own (port 0 or a free
# one), so the processes share nothing. Each one's output is printed whole when it ends, in
# start order.
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

# Every binary starts at once: unit_tests as one process, integration_tests as its shards;
# outputs are printed whole, in that order, as each ends.
names=(); pids=(); xmls=(); logs=()
start() {   # NAME XML LOG [env...]
  local name=$1 xml=$2 log=$3; shift 3
  run "$bin" "$xml" "$@" >"$log" 2>&1 &
  names+=("$name"); xmls+=("$xml"); logs+=("$log"); pids+=($!)
}
for bin in "$build"/tests/*_tests; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  if [ "$name" != integration_tests ] || [ "$shards" -le 1 ]; then
    start "$name" "$report_dir/$name.xml" "$report_dir/$name.log"
    continue
  fi
  for i in $(seq 0 $((shards - 1))); do
    start "$name, shard $((i + 1)) of $shards" "$report_dir/$name.$i.xml" \
      "$report_dir/$name.$i.log" GTEST_TOTAL_SHARDS="$shards" GTEST_SHARD_INDEX="$i"
  done
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"; rc=$?
  echo "=== ${names[$i]}"
  cat "${logs[$i]}"
  tally "${names[$i]}" "${xmls[$i]}" "$rc"
done
# The names of the tests that failed come last but one, so the tail of a long log says which.
for log in "${logs[@]}"; do
  grep -E '^\[  FAILED  \] [A-Za-z_]' "$log" | grep -v -e ' listed below' -e ' ms)$' | sort -u
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$status" -eq 0 ]
