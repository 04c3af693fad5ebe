#!/usr/bin/env bash
# Runs every fuzz target of a fuzz-preset build for FUZZ_SECONDS (default
# 30) each, FUZZ_JOBS (default 2) at a time, starting from the checked-in
# seeds and regressions, and prints each target's executions and coverage.
# Exits non-zero if any target found a crash, a leak, a timeout or an
# out-of-memory input: its log and reproducer are then named
# (tests/fuzz/README.md says how to turn one into a regression input).
#
# usage: tests/fuzz/run_fuzzers.sh [BUILD_DIR] [TARGET...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build/fuzz}
shift || true
seconds=${FUZZ_SECONDS:-30}
jobs=${FUZZ_JOBS:-2}
out=$build/fuzz-runs
if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cd "$here/corpus" && ls)
fi

run_one() {
  local target=$1 dir=$out/$1
  mkdir -p "$dir/corpus" "$dir/artifacts"
  local inputs=("$dir/corpus" "$here/corpus/$target")
  [ -d "$here/regressions/$target" ] && inputs+=("$here/regressions/$target")
  local dict=()
  [ -f "$here/dictionaries/$target.dict" ] &&
    dict=("-dict=$here/dictionaries/$target.dict")
  local options=()  # the target's own libFuzzer flags, one a line
  [ -f "$here/options/$target" ] && mapfile -t options <"$here/options/$target"
  "$build/tests/fuzz/$target" -max_total_time="$seconds" -timeout=60 \
    -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/" "${dict[@]}" "${options[@]}" \
    "${inputs[@]}" >"$dir/log" 2>&1
  local rc=$?
  local execs cov features
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$dir/log")
  cov=$(grep -o 'cov: [0-9]*' "$dir/log" | tail -1 | cut -d' ' -f2)
  features=$(grep -o 'ft: [0-9]*' "$dir/log" | tail -1 | cut -d' ' -f2)
  if [ $rc -eq 0 ]; then
    printf 'fuzz %-22s ok      %9s runs  %6s edges  %6s features  %ss\n' \
      "$target" "${execs:-?}" "${cov:-?}" "${features:-?}" "$seconds"
  else
    printf 'fuzz %-22s FAILED  (exit %d) log: %s\n' "$target" $rc "$dir/log"
    grep -E '^==[0-9]+==|FUZZ_CHECK|runtime error|Test unit written|SUMMARY' \
      "$dir/log" | head -20 | sed 's/^/    /'
  fi
  return $rc
}
export -f run_one
export here build seconds out

for target in "${targets[@]}"; do
  [ -x "$build/tests/fuzz/$target" ] || {
    echo "run_fuzzers: $build/tests/fuzz/$target is not built" \
      "(cmake --build --preset fuzz)" >&2
    exit 2
  }
done
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}'
rc=$?
[ $rc -eq 0 ] && echo "fuzz: ${#targets[@]} targets, ${seconds}s each, no crash"
exit $rc
