#!/usr/bin/env bash
# Repeats the suites that run on real time (timer thread, work queues, bind flow, reflectors,
# the reclaimer's poll) many times under ThreadSanitizer while both cores are kept busy, so a
# test that races the clock fails here, where it is written, rather than at random in
# someone's CI run.
# Usage: scripts/stress.sh [REPEATS]   (default 50; builds build-tsan/ if needed)
set -euo pipefail
cd "$(dirname "$0")/.."
repeat="${1:-50}"
suites=(workers_clock_test workers_work_queue_test workers_bind_flow_test workers_queue_workers_test
        kube_reflector_test kube_apply_pipe_test kube_watch_stream_test cache_reclaimer_test)
dir=$(./scripts/build.sh tsan "${suites[@]}")
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"

# Load: one busy loop per core, for as long as the suites run.
load=()
for _ in $(seq "$(nproc)"); do (while :; do :; done) & load+=($!); done
trap 'kill "${load[@]}" 2>/dev/null || true' EXIT

status=0
for s in "${suites[@]}"; do
  bin=$(find "$dir/tests" -type f -name "$s" -perm -u+x | head -1)
  [ -n "$bin" ] || { echo "stress: $s not built" >&2; exit 1; }
  start=$(date +%s)
  # The tests whose subject is seconds of real spacing are left out: 50 x 1-2 s adds nothing.
  filter='-RealClockTest.FiresInTimeOrderWhenDueOneByOne:ReflectorTest.AWatchEndedAtItsTimeoutSecondsResumesWithoutRelisting'
  # The watch reader: only its tests on real time (Cancel, read timeouts, TLS); the byte
  # layouts do not depend on timing and take seconds under TSan.
  [ "$s" = kube_watch_stream_test ] && filter='*Cancel*:*Timeout*:*Tls*'
  if "$bin" --gtest_repeat="$repeat" --gtest_brief=1 \
       --gtest_filter="$filter" > "/tmp/stress-$s.log" 2>&1; then
    echo "stress: $s x$repeat ok ($(( $(date +%s) - start ))s)"
  else
    echo "stress: $s x$repeat FAILED ($(( $(date +%s) - start ))s); the failures:" >&2
    grep -E '^\[  FAILED|Failure|WARNING: ThreadSanitizer|^ +(Expected|Actual|Which is)' "/tmp/stress-$s.log" | head -40 >&2
    status=1
  fi
done
exit $status
