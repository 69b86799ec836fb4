#!/bin/bash
# places.sh: v2lane-places.service, under the guest's systemd (guest.sh boots it). Puts
# checks.sh in each place a systemd host has and checks that nothing is left after it:
#   session          root in a login session scope, shared with its shell (logind, pam)
#   container        root in a container with a private cgroup namespace, beside the
#                    container's other processes (systemd-nspawn --as-pid2)
#   container-alone  zygo alone as the container's entry point (one container per run)
#   service          zygo serve as a Delegate=yes service alone in /system.slice/zygo.service;
#                    each one-shot run a Delegate=yes service of its own
#   user             an ordinary user (uid 1000) in a terminal scope under user@1000.service
#   ssh              that user in a root-owned session scope, where zygo may refuse clearly
# Environment (from the unit): ZYGO, LANE, OUT, V2_PLACES, V2_REFUSE_OK (places where a
# clear refusal passes too).
set -u
. "$LANE/lib.sh"
START=$(now)
WORK=/var/lib/v2lane
mkdir -p "$WORK"
USER_ENV=(HOME=/home/v2user USER=v2user LOGNAME=v2user PATH=/usr/local/bin:/usr/bin:/bin
          XDG_RUNTIME_DIR=/run/user/1000 DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus)

mode_of() { [[ " ${V2_REFUSE_OK:-ssh} " == *" $1 "* ]] && echo refuse-ok || echo limits; }

# Commands as v2user from this service (no session of its own: runuser without -l).
as_user() { runuser -u v2user -- env -i "${USER_ENV[@]}" "$@"; }

leftovers() {
  local p=$1 cgs units
  cgs=$(leftover_cgroups | tr '\n' ' ')
  units=$(leftover_units | tr '\n' ' ')
  if [ "$p" = user ] || [ "$p" = ssh ]; then
    units="$units$(as_user bash -c ". $LANE/lib.sh; leftover_units --user" | tr '\n' ' ')"
  fi
  if [ -n "$cgs$units" ]; then
    fail "$p.leftovers" "left behind: ${cgs:+cgroups $cgs}${units:+units $units}"
  else
    pass "$p.leftovers"
  fi
}

# A login shell runs checks.sh as its child, so the scope holds the shell too.
place_session() {
  runuser -l root -c "export ZYGO=$ZYGO V2L_SHARED=1 \
    V2L_EXPECT='^/user\.slice/user-0\.slice/session-[^/]+\.scope\$'
    bash $LANE/checks.sh session $(mode_of session); exit \$?"
}

# The guest's root, without its mounts, as the containers' directory tree (nspawn will
# not run on / itself); --volatile=overlay keeps what a container writes to itself.
# /proc/sys and /sys writable, as `docker run --privileged` has them, so that what the
# container places judge is where cgroups go; nspawn's default (/proc/sys read-only) is
# checked once, by container.nspawn-default.
NSPAWN=(env SYSTEMD_NSPAWN_API_VFS_WRITABLE=1
        systemd-nspawn --quiet --pipe --link-journal=no --directory="$WORK/root" --volatile=overlay
        --bind-ro="$LANE" --kill-signal=SIGTERM --setenv=ZYGO="$ZYGO")
container_root() {
  mkdir -p "$WORK/root"
  mountpoint -q "$WORK/root" || mount --bind / "$WORK/root"
}

# What the kernel allows in such a container (facts for the report): with another process
# in the container's root cgroup, +memory cannot be enabled below it (the root of a
# cgroup namespace is not the root cgroup); once every process is in a leaf, it can.
probe_container_root() {
  "${NSPAWN[@]}" --machine=v2lane-probe --as-pid2 /bin/bash -c '
    cd /sys/fs/cgroup
    echo "INFO container: kernel: processes in the container root: $(wc -l < cgroup.procs)," \
      "enabling +memory there: $(echo +memory 2>&1 > cgroup.subtree_control && echo ok)"
    mkdir leaf && for p in $(cat cgroup.procs); do echo "$p" > leaf/cgroup.procs; done 2> /dev/null
    echo "INFO container: kernel: with every process moved to /leaf," \
      "enabling +memory +pids +cpu: $(echo "+memory +pids +cpu" 2>&1 > cgroup.subtree_control && echo ok)"' 2>&1
}

# zygo run as the entry point of a container as nspawn makes it by default (/proc/sys
# read-only, as docker without --privileged has it): no sandbox can mount its own /proc
# there, so the run must refuse in one line naming the fix.
check_nspawn_default() {
  local out rc
  # --register=no: under TCG machined's registration has timed out here (it is not
  # what this check is about).
  out=$(systemd-nspawn --quiet --pipe --link-journal=no --directory="$WORK/root" \
    --volatile=overlay --register=no "$ZYGO" run host /bin/true 2>&1 < /dev/null)
  rc=$?
  if [ "$rc" = 0 ]; then
    pass container.nspawn-default "zygo run host /bin/true: 0"
  elif [ "$rc" = 125 ] && [ "$(printf '%s\n' "$out" | grep -c .)" = 1 ] &&
       [[ $out == *"SYSTEMD_NSPAWN_API_VFS_WRITABLE=1"* ]]; then
    # A new user namespace may not mount proc where parts of /proc are mounted over.
    pass container.nspawn-default "refused, naming the fix: ${out:0:200}"
  else
    fail container.nspawn-default "zygo run host /bin/true exited $rc: ${out:0:320}"
  fi
}

place_container() {
  container_root
  probe_container_root
  check_nspawn_default
  local w=$WORK/container
  mkdir -p "$w"
  "${NSPAWN[@]}" --machine=v2lane-container --bind="$w" --setenv=V2L_WORK="$w" \
    --setenv=V2L_EXPECT='^/$' --setenv=V2L_SHARED=1 --as-pid2 \
    /bin/bash "$LANE/checks.sh" container "$(mode_of container)"
}

place_container_alone() {
  container_root
  local w=$WORK/container-alone
  mkdir -p "$w"
  # checks.sh runs here; each zygo runs as PID 1 of a container of its own.
  cat > "$w/wrap" <<EOF
#!/bin/sh
exec ${NSPAWN[*]} --machine=v2lane-alone-\$\$ --bind=$w "\$@"
EOF
  chmod 755 "$w/wrap"
  V2L_WRAP="$w/wrap" V2L_WORK="$w" bash "$LANE/checks.sh" container-alone "$(mode_of container-alone)"
}

place_service() {
  local w=$WORK/service sock
  mkdir -p "$w"
  if [ -f "$LANE/zygo.service" ]; then
    # The shipped unit, installed as docs/supervisor.md says (zygo in /usr/local/bin).
    ln -sf "$ZYGO" /usr/local/bin/zygo
    cp "$LANE/zygo.service" /etc/systemd/system/zygo.service
    systemctl daemon-reload
    systemctl start zygo.service
    sock=/run/zygo/zygo.sock
  else
    systemd-run --quiet --unit=zygo --service-type=exec -p Delegate=yes \
      "$ZYGO" serve --listen "$w/zygo.sock" --state-dir "$w/state" --no-demo
    sock=$w/zygo.sock
  fi
  for _ in $(seq 240); do
    [ -S "$sock" ] && "$ZYGO" ls --socket "$sock" > /dev/null 2>&1 && break
    systemctl -q is-active zygo.service || break
    sleep 0.5
  done
  local cg pid
  cg=$(systemctl show -P ControlGroup zygo.service)
  pid=$(systemctl show -P MainPID zygo.service)
  local d=/sys/fs/cgroup$cg
  info "service: zygo.service in $cg, main pid $pid in $(cgroup_of "$pid"), procs: $(rd "$d/cgroup.procs")," \
    "subtree_control: $(rd "$d/cgroup.subtree_control"), children: $(shopt -s nullglob; cd "$d" 2>/dev/null && echo */)"
  # zygo serve alone in the service's cgroup (or, once it moved itself, in a leaf of it).
  if [ "$cg" = /system.slice/zygo.service ] && [ -n "$pid" ] && [ "$pid" != 0 ] &&
     [[ $(cgroup_of "$pid") == "$cg"* ]]; then
    pass service.place "zygo serve (pid $pid) in $(cgroup_of "$pid")"
  else
    fail service.place "zygo.service is not running in /system.slice/zygo.service ($cg, pid $pid): $(journalctl -q -u zygo.service -n 3 --no-pager 2>&1 | tr '\n' ' ')"
  fi
  cat > "$w/wrap" <<'EOF'
#!/bin/sh
# One zygo run as a Delegate=yes service of its own, zygo its only process.
exec systemd-run --quiet --wait --pipe --collect --service-type=exec -p Delegate=yes \
  --unit="v2lane-run-$$" "$@"
EOF
  chmod 755 "$w/wrap"
  V2L_WRAP="$w/wrap" V2L_WORK="$w" V2L_SOCKET="$sock" bash "$LANE/checks.sh" service "$(mode_of service)"
  systemctl stop zygo.service
  info "service: zygo.service stopped: $(systemctl show -P Result zygo.service 2>/dev/null);" \
    "its log: $(journalctl -q -u zygo.service -n 12 --no-pager -o cat 2>&1 | tr '\n' ' ' | cut -c1-900)"
  systemctl reset-failed zygo.service 2> /dev/null
  rm -f /etc/systemd/system/zygo.service /usr/local/bin/zygo
  systemctl daemon-reload
}

# The user manager of uid 1000, as after a login (linger, enabled at the start: it
# starts in the background and stays between the checks).
start_user_manager() {
  local state=""
  for _ in $(seq 240); do
    state=$(as_user systemctl --user is-system-running 2> /dev/null)
    [ "$state" = running ] || [ "$state" = degraded ] && break
    sleep 0.5
  done
  local u=/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service
  info "user: systemctl --user is-system-running: ${state:-no answer}; user bus:" \
    "$(stat -c '%A %U %n' /run/user/1000/bus 2>&1)"
  info "user: user@1000.service owner $(stat -c %U "$u/cgroup.procs" 2>/dev/null)," \
    "controllers: $(rd "$u/cgroup.controllers"), subtree_control: $(rd "$u/cgroup.subtree_control");" \
    "app.slice subtree_control: $(rd "$u/app.slice/cgroup.subtree_control")"
}

place_user() {
  start_user_manager
  # What a Delegate=yes scope of the user manager gets (the fix zygo's refusal names).
  as_user systemd-run --user --scope --quiet -p Delegate=yes /bin/bash -c '
    c=/sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)
    echo "INFO user: a Delegate=yes user scope: ${c#/sys/fs/cgroup}, owner $(stat -c %U "$c")," \
      "controllers: $(cat "$c/cgroup.controllers")"'

  # A terminal as a desktop starts one: a scope the user manager made, under app.slice,
  # holding the shell (here bash running checks.sh) and whatever it runs.
  as_user systemd-run --user --quiet --wait --pipe --setenv=ZYGO="$ZYGO" \
    --setenv=V2L_SHARED=1 \
    --setenv=V2L_EXPECT='^/user\.slice/user-1000\.slice/user@1000\.service/app\.slice/[^/]+\.scope$' \
    /bin/bash -c "info() { echo INFO \"\$*\"; }
      info \"user: terminal env: XDG_RUNTIME_DIR=\$XDG_RUNTIME_DIR DBUS_SESSION_BUS_ADDRESS=\${DBUS_SESSION_BUS_ADDRESS:-unset}\"
      exec systemd-run --user --scope --quiet /bin/bash -c 'bash $LANE/checks.sh user $(mode_of user); exit \$?'"
}

# An ssh login: pam_systemd makes a session scope under user-1000.slice, owned by root.
place_ssh() {
  start_user_manager
  runuser -l v2user -c "export ZYGO=$ZYGO V2L_SHARED=1 \
    V2L_EXPECT='^/user\.slice/user-1000\.slice/session-[^/]+\.scope\$'
    echo \"INFO ssh: session env: XDG_RUNTIME_DIR=\$XDG_RUNTIME_DIR DBUS_SESSION_BUS_ADDRESS=\${DBUS_SESSION_BUS_ADDRESS:-unset} XDG_SESSION_CLASS=\$XDG_SESSION_CLASS\"
    bash $LANE/checks.sh ssh $(mode_of ssh); exit \$?"
}

info "places: systemd $(systemctl --version | head -n1 | cut -d' ' -f2), $(systemd-detect-virt)," \
  "root subtree_control: $(rd /sys/fs/cgroup/cgroup.subtree_control)," \
  "system state: $(systemctl is-system-running)"
# The user managers of root and uid 1000 start now, behind the places that need none
# (a login would start them; under TCG each takes 15-40 s).
loginctl enable-linger root v2user
# machined, which registers each container, started ahead rather than by the first
# nspawn's bus call (under TCG that activation can outlast nspawn's 25 s D-Bus timeout).
systemctl start --no-block systemd-machined.service
# What a hung place was doing, for its FAIL: every process with its kernel wait channel,
# the kernel stacks of zygo's processes and of any in uninterruptible sleep, systemd's
# pending jobs (system and user), the journal's end.
dump_hang() {
  {
    ps -eo pid,ppid,uid,stat,wchan:32,etimes,args --forest
    local pid
    for pid in $(ps -eo pid=,stat= | awk '$2 ~ /D/ {print $1}') $(pgrep zygo); do
      echo "== $pid: $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)"
      echo "cgroup: $(cat "/proc/$pid/cgroup" 2>/dev/null)"
      cat "/proc/$pid/stack" 2>/dev/null
    done
    systemctl --no-pager list-jobs
    as_user systemctl --user --no-pager list-jobs
    journalctl --no-pager -q -o short-monotonic -n 300
  } > "$OUT/hang-$1.txt" 2>&1
}

# A place that runs past V2_PLACE_TIMEOUT seconds (a hang: one takes 15-100 s) is
# failed with what it was doing, and the places after it are not run: the guest may be
# wedged, and the lane must end within its budget with the evidence.
PLACE_TIMEOUT=${V2_PLACE_TIMEOUT:-300}
hung=""
for p in $V2_PLACES; do
  [ "$p" = root ] && continue
  if [ -n "$hung" ]; then
    fail "$p.place" "not run: the $hung place hung"
    continue
  fi
  t0=$(now)
  case $p in
    session) place_session & ;;
    container) place_container & ;;
    container-alone) place_container_alone & ;;
    service) place_service & ;;
    user) place_user & ;;
    ssh) place_ssh & ;;
    *) fail "$p.place" "no such place"; continue ;;
  esac
  pid=$!
  while kill -0 "$pid" 2> /dev/null && [ $(( ($(now) - t0) / 1000000 )) -lt "$PLACE_TIMEOUT" ]; do
    sleep 1
  done
  if kill -0 "$pid" 2> /dev/null; then
    dump_hang "$p"
    fail "$p.finished" "the place ran past ${PLACE_TIMEOUT}s; what it was doing: out/hang-$p.txt"
    hung=$p
  else
    wait "$pid"
  fi
  leftovers "$p"
  for w in "$WORK/$p" /tmp/v2lane-"$p".*; do [ -d "$w" ] && save_work "$p" "$w"; done
  info "places: $p took $(elapsed "$t0")s"
done
info "places: done after $(elapsed "$START")s"
# The journal (system and user managers, logind, machined), for a FAIL's details.
journalctl --no-pager -q -o short-monotonic > "$OUT/journal.log" 2>&1
