#!/bin/bash
# The v2 lane in the guest (run-guest.sh's TEST_SCRIPT; runs as root in the guest's root
# cgroup, with no systemd yet). It makes the guest look like a Debian host (no container
# marker, an ordinary user with uid 1000), runs the cgroup drivers' own tests and the
# checks from the root cgroup, then starts Debian's systemd as PID 1 of a new pid and
# mount namespace over the real cgroup2 root (with D-Bus and logind), whose
# v2lane-places.service runs the checks from every place a host has (places.sh). Ends
# with "v2lane: N passed, N failed" and exits 1 on any failure.
# V2_PLACES (default: all) and V2_UNIT_TESTS (default: all; "none") narrow what runs.
set -u
OUT=$V2LANE_OUT
LANE=$(cd "$(dirname "$OUT")/lane" && pwd)
. "$LANE/lib.sh"
START=$(now)
export ZYGO ZYGO_BIN LANE OUT
export V2_PLACES=${V2_PLACES:-root container container-alone service session user ssh}
# Places where a clear refusal passes as well as working limits (issue 17: the ssh session).
# Where a clear refusal naming the fix passes too: an ordinary user's ssh session (as
# issue 17 allows) and a container whose root cgroup zygo shares with the container's
# other processes (no cgroup there can get controllers; see docs/zygo-run.md).
export V2_REFUSE_OK=${V2_REFUSE_OK:-ssh}
UNIT_TESTS=${V2_UNIT_TESTS:-cgroup_v2_test cgroup_v2_placement_test cgroup_driver_test cgroup_sweep_test forked_zygote_test seccomp_profiles_test limits_escape_test stale_cgroup_test}

# The host's root reaches the guest as-is: drop what says "container" (this machine's
# /.dockerenv would make systemd a container's init) and give uid 1000 to our own user.
make_host() {
  rm -f /.dockerenv /run/.containerenv
  sed -i '/^[^:]*:[^:]*:1000:/d' /etc/passwd /etc/group
  sed -i '/^v2user:/d' /etc/shadow
  echo 'v2user:x:1000:1000:v2lane user:/home/v2user:/bin/bash' >> /etc/passwd
  echo 'v2user:x:1000:' >> /etc/group
  echo 'v2user:*:19000:0:99999:7:::' >> /etc/shadow
  mkdir -p /home/v2user && chown 1000:1000 /home/v2user
  # A machine id of its own, as a booted host has.
  rm -f /etc/machine-id && systemd-machine-id-setup > /dev/null 2>&1
  # Under TCG a client can take longer than the system bus's 30 s to authenticate; the bus
  # then drops it, and a user manager that lost its system-bus connection that way cannot
  # move an ssh session's process into its scopes (the lane saw "Got disconnect on system
  # bus", then every scope of the ssh place failed).
  mkdir -p /etc/dbus-1/system.d
  cat > /etc/dbus-1/system.d/v2lane-timeouts.conf <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <limit name="auth_timeout">600000</limit>
</busconfig>
EOF
  mkdir -p /etc/systemd/system
  cat > /etc/systemd/system/v2lane.target <<EOF
[Unit]
Description=v2lane: what a booted host runs, and the lane
Requires=basic.target
Wants=dbus.socket systemd-logind.service v2lane-places.service
After=basic.target
AllowIsolate=yes
EOF
  cat > /etc/systemd/system/v2lane-places.service <<EOF
[Unit]
Description=v2lane: the checks from every place
After=basic.target dbus.socket systemd-logind.service
[Service]
Type=oneshot
Environment="ZYGO=$ZYGO" "ZYGO_BIN=$ZYGO_BIN" "LANE=$LANE" "OUT=$OUT" "V2_PLACES=$V2_PLACES" "V2_REFUSE_OK=$V2_REFUSE_OK"
ExecStart=/bin/bash $LANE/places.sh
StandardOutput=append:$OUT/places.log
StandardError=append:$OUT/places.log
ExecStopPost=/bin/systemctl --no-block poweroff
EOF
}

mode_of() { [[ " $V2_REFUSE_OK " == *" $1 "* ]] && echo refuse-ok || echo limits; }

# A Bazel test binary copied by run.sh with its runfiles: TESTS/NAME.runfiles/zygo/...
run_unit_test() {
  local name=$1 bin t0 log
  bin=$(ls "$OUT"/../tests/"$name".runfiles/zygo/*/"$name" 2> /dev/null | head -n1)
  if [ -z "$bin" ]; then fail "unit.$name" "not staged by run.sh"; return; fi
  log=$OUT/unit-$name.log
  t0=$(now)
  mkdir -p "/tmp/unit-$name"
  (cd "$(dirname "$bin")" && TEST_SRCDIR="${bin%/zygo/*}" TEST_WORKSPACE=zygo \
    TEST_TMPDIR="/tmp/unit-$name" timeout -k 5 "${V2_UNIT_TIMEOUT:-300}" "$bin" > "$log" 2>&1)
  local rc=$?
  local ran skipped failed
  ran=$(sed -n 's/^\[==========\] \([0-9]*\) tests\? from .* ran.*/\1/p' "$log" | tail -n1)
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\?.*/\1/p' "$log" | tail -n1)
  failed=$(grep -E '^\[  FAILED  \] [A-Za-z]' "$log" | sed 's/^\[  FAILED  \] //; s/ (.*//; s/,.*//' | sort -u | tr '\n' ' ')
  if [ "$rc" = 0 ]; then
    pass "unit.$name" "${ran:-?} tests, ${skipped:-0} skipped, $(elapsed "$t0")s"
    local names
    names=$(sed -n 's/^\[  SKIPPED \] \([A-Za-z][^ ]*\).*/\1/p' "$log" | sort -u | tr '\n' ' ')
    [ -n "$names" ] && info "unit.$name skipped: $names"
  elif [ "$rc" = 124 ]; then
    fail "unit.$name" "timed out after ${V2_UNIT_TIMEOUT:-300}s; see out/unit-$name.log"
  else
    fail "unit.$name" "exit $rc, failed: ${failed:-$(brief "$log")}"
  fi
}

# Debian's systemd as PID 1 of a new pid and mount namespace. It shares the cgroup
# namespace, so it manages the guest's real cgroup2 root, as on a booted host.
boot_systemd() {
  local left=$1
  info "systemd: starting (at most ${left}s)"
  timeout -k 10 "$left" unshare --pid --mount --fork --mount-proc \
    /lib/systemd/systemd --system --unit=v2lane.target < /dev/null > "$OUT/systemd.log" 2>&1
  local rc=$?
  [ "$rc" = 124 ] && fail "v2lane.places-finished" "systemd still ran after ${left}s"
  info "systemd: exited $rc after $(elapsed "$START")s of the lane"
}

main() {
  make_host
  info "guest: $(uname -r), $(nproc) CPUs, cgroup2 at /sys/fs/cgroup: $(grep -o 'cgroup2 [^ ]* [^ ]* [^ ]*' /proc/self/mounts)"
  for t in $UNIT_TESTS; do [ "$t" = none ] || run_unit_test "$t"; done
  info "unit tests done after $(elapsed "$START")s"
  if [[ " $V2_PLACES " == *" root "* ]]; then
    # The control: from the root cgroup (only PID 1 lives there on a systemd host) the
    # v2 driver has always worked, so this place shows the checks themselves can pass.
    V2L_EXPECT='^/$' V2L_WORK=/var/lib/v2lane/root bash "$LANE/checks.sh" root "$(mode_of root)"
    save_work root /var/lib/v2lane/root
    echo "INFO root: leftovers: $(leftover_cgroups | tr '\n' ' ')"
    if [ -n "$(leftover_cgroups)" ]; then
      fail root.leftovers "cgroups left: $(leftover_cgroups | tr '\n' ' ')"
    else
      pass root.leftovers
    fi
  fi
  : > "$OUT/places.log"
  if [ -n "$(echo " $V2_PLACES " | sed 's/ root / /; s/ //g')" ]; then
    boot_systemd $(( ${V2_BUDGET:-870} - SECONDS ))
    cat "$OUT/places.log"
    grep -q '^INFO places: done' "$OUT/places.log" ||
      fail "v2lane.places-finished" "places.sh did not finish; see out/places.log and out/systemd.log"
  fi
}

main 2>&1 | tee "$OUT/results.log"
np=$(grep -c '^PASS ' "$OUT/results.log")
nf=$(grep -c '^FAIL ' "$OUT/results.log")
echo "INFO lane took $(elapsed "$START")s in the guest"
echo "v2lane: $np passed, $nf failed"
[ "$nf" = 0 ] && [ "$np" -gt 0 ]
