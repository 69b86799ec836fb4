#!/bin/bash
# run.sh [-k KERNEL_PACKAGE] [-o RUN_DIR] [-t TIMEOUT_S] [BAZEL_BIN]
#
# The cgroup-v2 lane: boots Debian's kernel under qemu with a pure cgroup2 hierarchy
# (../shared/tools/v2lane/run-guest.sh, beside this repository), starts Debian's systemd
# in it, and runs zygo's checks from every place a systemd host has (docs/testing.md).
# BAZEL_BIN (default: the repository's bazel-bin) must hold //cli:zygo, //supervisor, the
# agents, //net:zygo-net and the cgroup tests below. Prints one PASS/FAIL line per check,
# the time taken, and last "v2lane: N passed, N failed"; exits 1 on any failure.
# V2_PLACES and V2_UNIT_TESTS (space-separated; see guest.sh) narrow what runs.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
TOOLS=${V2LANE_TOOLS:-$REPO/../shared/tools/v2lane}
KPKG="" RUN="" TMO=900
while getopts "k:o:t:h" opt; do
  case $opt in
    k) KPKG=$OPTARG ;; o) RUN=$OPTARG ;; t) TMO=$OPTARG ;;
    *) sed -n '2,10p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
BIN=${1:-$REPO/bazel-bin}
START=$SECONDS

summary() {  # summary PASSED FAILED
  echo "v2lane: took $((SECONDS - START))s"
  echo "v2lane: $1 passed, $2 failed"
  [ "$2" -eq 0 ] && [ "$1" -gt 0 ]
  exit
}

[ -x "$TOOLS/run-guest.sh" ] || {
  echo "FAIL v2lane.tools: no $TOOLS/run-guest.sh (set V2LANE_TOOLS)"; summary 0 1; }
[ -x "$BIN/cli/zygo" ] || { echo "FAIL v2lane.binaries: no $BIN/cli/zygo"; summary 0 1; }

RUN=${RUN:-${V2LANE_CACHE:-/tmp/v2lane}/runs/lane-$(date +%Y%m%d-%H%M%S)}
rm -rf "$RUN/lane" "$RUN/tests" "$RUN/out" "$RUN/bin"
mkdir -p "$RUN/lane/fn" "$RUN/tests"
RUN=$(cd "$RUN" && pwd)
cp "$HERE"/lib.sh "$HERE"/checks.sh "$HERE"/warm.sh "$HERE"/places.sh "$RUN/lane/"
cp "$HERE"/fn/handler.py "$HERE"/fn/v2fn.toml "$HERE"/fn/handler.js "$HERE"/fn/v2node.toml \
  "$RUN/lane/fn/"
# The shipped unit file, which the service place installs as it is.
[ -f "$REPO/supervisor/zygo.service" ] && cp "$REPO/supervisor/zygo.service" "$RUN/lane/"
# Helpers run-guest.sh does not know of, in bazel-bin's layout beside the ones it copies
# (zygo finds them as ../PACKAGE/NAME from cli/zygo).
for h in core/zygo-scope agents/node/zygo-agent-node; do
  if [ -f "$BIN/$h" ]; then
    install -D -m 755 "$BIN/$h" "$RUN/bin/$h"
  else
    echo "run.sh: warning: $BIN/$h is missing" >&2
  fi
done
# The tests' runfiles, copied (not linked into Bazel's output base) so that a rebuild
# while the guest runs changes nothing under it.
for t in core/cgroup_v2_test core/cgroup_v2_placement_test core/cgroup_driver_test core/cgroup_sweep_test \
         core/forked_zygote_test core/seccomp_profiles_test \
         security_tests/limits_escape_test security_tests/stale_cgroup_test; do
  if [ -d "$BIN/$t.runfiles" ]; then
    cp -rL "$BIN/$t.runfiles" "$RUN/tests/"
  else
    echo "run.sh: warning: $BIN/$t.runfiles is missing" >&2
  fi
done

export V2_BUDGET=$((TMO - 60))
"$TOOLS/run-guest.sh" -o "$RUN" -t "$TMO" ${KPKG:+-k "$KPKG"} "$BIN" "$HERE/guest.sh" \
  > "$RUN/run-guest.log" 2>&1
rc=$?
log=$RUN/out/test.log
grep -E '^(PASS|FAIL|INFO) ' "$log" 2> /dev/null
passed=$(grep -c '^PASS ' "$log" 2> /dev/null)
failed=$(grep -c '^FAIL ' "$log" 2> /dev/null)
if ! grep -q '^v2lane: [0-9]* passed' "$log" 2> /dev/null; then
  # The guest did not finish: count what the places had reported, and the guest itself.
  if [ -f "$RUN/out/places.log" ] && ! grep -q '^INFO systemd: exited' "$log" 2> /dev/null; then
    grep -E '^(PASS|FAIL|INFO) ' "$RUN/out/places.log"
    passed=$((passed + $(grep -c '^PASS ' "$RUN/out/places.log")))
    failed=$((failed + $(grep -c '^FAIL ' "$RUN/out/places.log")))
  fi
  echo "FAIL v2lane.guest: the guest did not finish (run-guest.sh exit $rc): $(tail -n 3 "$RUN/run-guest.log" | tr '\n' ' ')"
  failed=$((failed + 1))
fi
echo "v2lane: run dir $RUN (out/test.log, out/places.log, console.log)"
summary "${passed:-0}" "${failed:-0}"
