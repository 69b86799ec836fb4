#!/bin/bash
# checks.sh PLACE [refuse-ok]: the lane's checks of zygo, run from wherever the caller put
# this script (a session scope, a container, a user's terminal scope, ...). Prints one
# PASS/FAIL line per check, named PLACE.CHECK.
#
# With refuse-ok (by default only an ordinary user's ssh session), a check passes either by working or by
# a refusal: exit 125 with one line on stderr that names the fix.
# Environment:
#   ZYGO         the zygo binary
#   V2L_WRAP     a command that runs zygo in the place (a Delegate=yes service, a
#                container whose only process is zygo); empty: run zygo right here
#   V2L_WORK     a directory for outcome files, the supervisor's socket and state; it must
#                be writable here and seen at the same path by the wrapped zygo
#   V2L_EXPECT   a regex the caller's own cgroup must match (checked when not wrapped)
#   V2L_SHARED   1: the caller's cgroup must hold other processes too (a shell's scope)
#   V2L_SOCKET   a supervisor already serving at this socket (e.g. a systemd service);
#                unset: this script starts `zygo serve` itself (wrapped)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
P=$1
MODE=${2:-limits}
WRAP=${V2L_WRAP:-}
W=${V2L_WORK:-$(mktemp -d "/tmp/v2lane-$P.XXXXXX")}
mkdir -p "$W"
FIX_RE='systemd-run|Delegate|delegat|--allow-unlimited'
# Per-request limits of the warm function (fn/v2fn.toml).
FN_MEMORY=67108864 FN_PIDS=16
declare -A RC
# One zygo command's limit: they take 0.5-10 s under TCG; past this one has hung.
ZTIMEOUT=${V2L_TIMEOUT:-90}

# z NAME ARGS...: runs `zygo ARGS` in the place: $W/NAME.out, $W/NAME.err, ${RC[NAME]}.
z() {
  local name=$1
  shift
  # shellcheck disable=SC2086  # WRAP is a command prefix: split on purpose
  timeout -k 5 "$ZTIMEOUT" $WRAP "$ZYGO" "$@" > "$W/$name.out" 2> "$W/$name.err" < /dev/null
  RC[$name]=$?
  [ "${RC[$name]}" = 124 ] && echo "zygo $1 ran past ${ZTIMEOUT}s (timeout)" >> "$W/$name.err"
}

# A run that exited 125: a pass only in refuse-ok mode, and only as one clear line.
judge_refusal() {
  local check=$1 name=$2 lines=0 l
  while IFS= read -r l; do [ -n "$l" ] && lines=$((lines + 1)); done < "$W/$name.err"
  if [ "$MODE" != refuse-ok ]; then
    fail "$check" "exit 125: $(brief "$W/$name.err")"
  elif [ "$lines" = 1 ] && [[ $(rd "$W/$name.err") =~ $FIX_RE ]]; then
    pass "$check" "refused: $(brief "$W/$name.err")"
  else
    fail "$check" "exit 125 without one line naming the fix: $(brief "$W/$name.err")"
  fi
}

check_place() {
  [ -n "$WRAP" ] && return
  local cg procs=0 l d
  cg=$(cgroup_of)
  d=/sys/fs/cgroup${cg%/}
  while read -r l; do procs=$((procs + 1)); done < "$d/cgroup.procs"
  info "$P: cgroup $cg (owner $(stat -c %U "$d/cgroup.procs"), $procs processes, uid $UID," \
    "controllers: $(rd "$d/cgroup.controllers"), subtree_control: $(rd "$d/cgroup.subtree_control"))"
  if [ -n "${V2L_EXPECT:-}" ] && ! [[ $cg =~ $V2L_EXPECT ]]; then
    fail "$P.place" "in $cg, not a cgroup matching $V2L_EXPECT"
  elif [ "${V2L_SHARED:-0}" = 1 ] && [ "$procs" -lt 2 ]; then
    fail "$P.place" "$cg holds $procs process(es); the place is a cgroup shared with a shell"
  else
    pass "$P.place" "$cg, $procs processes"
  fi
}

check_run_true() {
  z true run host /bin/true
  case ${RC[true]} in
    0) pass "$P.run-true" ;;
    125) judge_refusal "$P.run-true" true ;;
    *) fail "$P.run-true" "exit ${RC[true]}: $(brief "$W/true.err")" ;;
  esac
}

# Only in `container`, whose root cgroup held the container's other processes: the first
# run moved every one of them (this script too) into /init, and the root holds none.
check_emptied_root() {
  [ "$P" = container ] && [ "$MODE" = limits ] || return 0
  local left
  left=$(grep -c . /sys/fs/cgroup/cgroup.procs)
  if [ -d /sys/fs/cgroup/init ] && [ "$left" = 0 ] && [ "$(cgroup_of)" = /init ]; then
    pass "$P.emptied-root" "$(grep -c . /sys/fs/cgroup/init/cgroup.procs) processes in /init, root subtree_control: $(rd /sys/fs/cgroup/cgroup.subtree_control)"
  else
    fail "$P.emptied-root" "root holds $left processes, this script is in $(cgroup_of)"
  fi
}

check_oom() {
  z oom run --outcome "$W/oom.json" -m 64m host /usr/bin/python3 -c 'b = b"x" * (512 << 20)'
  local rc=${RC[oom]} json
  json=$(rd "$W/oom.json")
  [[ $json =~ (\"limits_applied\":\ *[a-z]+).*(\"cgroup_placement\":\ *\"[^\"]*\") ]] &&
    info "$P: outcome: ${BASH_REMATCH[1]}, ${BASH_REMATCH[2]}"
  if [ "$rc" = 125 ]; then
    judge_refusal "$P.oom" oom
  elif [ "$rc" != 137 ]; then
    fail "$P.oom" "exit $rc, not 137: $(brief "$W/oom.err")"
  elif ! [[ $(rd "$W/oom.json") =~ \"oom_killed\":\ *true ]]; then
    fail "$P.oom" "exit 137 but the outcome has no \"oom_killed\": true: $(brief "$W/oom.json")"
  else
    pass "$P.oom" "137, oom_killed"
  fi
}

# Forks children that stay alive until the first fork fails; prints how far it got.
FORK_LOOP='
import errno, os, time
kids, err = [], "none"
for _ in range(40):
    try:
        pid = os.fork()
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e.errno))
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
print("forked=%d error=%s" % (len(kids), err))
for k in kids:
    os.kill(k, 9)
    os.waitpid(k, 0)
'

check_pids() {
  z pids run --outcome "$W/pids.json" --pids-limit 16 host /usr/bin/python3 -c "$FORK_LOOP"
  local rc=${RC[pids]} out forked="" err="" status=""
  out=$(brief "$W/pids.out")
  [[ $out =~ forked=([0-9]+)\ error=([A-Z0-9a-z]+) ]] && forked=${BASH_REMATCH[1]} err=${BASH_REMATCH[2]}
  [[ $(rd "$W/pids.json") =~ \"status\":\ *\"([a-z_]+)\" ]] && status=${BASH_REMATCH[1]}
  if [ "$rc" = 125 ]; then
    judge_refusal "$P.pids" pids
  elif [ -z "$forked" ] || [ "$forked" -lt 1 ]; then
    fail "$P.pids" "the fork loop did not fork at all (exit $rc): $out $(brief "$W/pids.err")"
  elif [ "$err" != EAGAIN ] || [ "$forked" -ge 16 ]; then
    fail "$P.pids" "forked $forked children, then error=$err (want EAGAIN before 16)"
  elif [ "$rc" != 0 ] || [ "$status" != pids_limit ]; then
    fail "$P.pids" "EAGAIN after $forked forks, but exit $rc, outcome status '$status' (want 0, pids_limit)"
  else
    pass "$P.pids" "EAGAIN after $forked forks, status pids_limit"
  fi
}

# The sandbox's cgroup is found from outside: the pid of a sleep with a unique argument,
# its /proc/PID/cgroup, and the nearest cgroup on its path with the cpu.max asked for.
check_cpu() {
  local mark="7.$$$RANDOM" pid="" cg="" found="" own c
  own=$(cgroup_of)
  # shellcheck disable=SC2086
  timeout -k 5 "$ZTIMEOUT" $WRAP "$ZYGO" run --cpus 0.5 host /bin/sleep "$mark" \
    > "$W/cpu.out" 2> "$W/cpu.err" < /dev/null &
  local zpid=$!
  for _ in $(seq 80); do
    pid=$(pgrep -fx "/bin/sleep $mark")
    [ -n "$pid" ] && break
    kill -0 "$zpid" 2> /dev/null || break
    sleep 0.25
  done
  if [ -n "$pid" ]; then
    pid=${pid%%$'\n'*}
    cg=$(cgroup_of "$pid")
    c=$cg
    while [ -n "$c" ] && [ "$c" != / ]; do
      [ "$(rd "/sys/fs/cgroup$c/cpu.max")" = "50000 100000" ] && { found=$c; break; }
      c=${c%/*}
    done
    info "$P: sandbox cgroup $cg (owner $(stat -c %U "/sys/fs/cgroup$cg" 2>/dev/null)," \
      "memory.max $(rd "/sys/fs/cgroup${found:-$cg}/memory.max")," \
      "pids.max $(rd "/sys/fs/cgroup${found:-$cg}/pids.max"))"
    kill "$pid" 2> /dev/null
  fi
  wait "$zpid"
  RC[cpu]=$?
  if [ "${RC[cpu]}" = 125 ]; then
    judge_refusal "$P.cpu" cpu
  elif [ -z "$pid" ]; then
    fail "$P.cpu" "no sandboxed sleep appeared (zygo exit ${RC[cpu]}): $(brief "$W/cpu.err")"
  elif [ -z "$found" ]; then
    fail "$P.cpu" "no cgroup on the sandbox's path $cg has cpu.max 50000 100000"
  elif [ "$found" = "$own" ] || [[ $own == "$found"/* ]]; then
    fail "$P.cpu" "cpu.max was set on the caller's own cgroup $found"
  else
    pass "$P.cpu" "cpu.max 50000 100000 in $found"
  fi
}

# Where a run did not work: what the plan says about the cgroup (the JSON's lines from the
# first one naming a cgroup or placement to the end of that object), and whether the
# sandbox starts at all without limits. Facts for the reader, not checks; where runs
# work, the oom outcome's placement line says enough, and under TCG each run costs.
show_plan() {
  [ "${RC[true]}" = 0 ] && return
  z plan run --dry-run --json --cpus 0.5 host /bin/true
  info "$P: --dry-run (exit ${RC[plan]}): $(sed -n '/"\(cgroup\|placement\)[a-z_]*": *{/,/}/p' "$W/plan.out" | tr -s ' \n' ' ' | head -c 600)"
}

# Whether the sandbox itself starts here, limits aside (a fact for the report: a place
# where it does not would fail for reasons other than cgroups).
show_unlimited() {
  [ "${RC[true]}" = 0 ] && return
  z unlimited run --allow-unlimited host /bin/true
  info "$P: zygo run --allow-unlimited host /bin/true: exit ${RC[unlimited]} $(brief "$W/unlimited.err")"
}

# doctor's limits line must say what a run does: ok where runs work, MISSING where they
# refuse.
check_doctor() {
  z doctor doctor
  local line="" l run=${RC[true]}
  while IFS= read -r l; do [[ $l == limits\ * ]] && { line=$l; break; }; done < "$W/doctor.out"
  local words
  read -ra words <<< "$line"
  line="${words[*]}"
  info "$P: doctor (exit ${RC[doctor]}): $line"
  if [ -z "$line" ]; then
    fail "$P.doctor" "no limits line (exit ${RC[doctor]}): $(brief "$W/doctor.out") $(brief "$W/doctor.err")"
  elif [ "$run" = 0 ] && [[ $line == "limits ok"* ]]; then
    pass "$P.doctor" "ok, as runs work"
  elif [ "$run" = 125 ] && [[ $line == "limits MISSING"* ]] && [ "${RC[doctor]}" = 1 ]; then
    pass "$P.doctor" "MISSING, as runs refuse"
  else
    fail "$P.doctor" "run-true exited $run but doctor says '$line' (exit ${RC[doctor]})"
  fi
}

# Where zygo refused, the fix its line names must work: a user scope with Delegate=yes.
check_fix() {
  # In a container there is no user manager to ask; its fixes are the container's own.
  [ "$MODE" = refuse-ok ] && [ "${RC[true]}" = 125 ] && [ "$P" != container ] || return
  timeout -k 5 "$ZTIMEOUT" systemd-run --user --scope --quiet -p Delegate=yes \
    "$ZYGO" run --outcome "$W/fix.json" -m 64m host /usr/bin/python3 -c 'b = b"x" * (512 << 20)' \
    > "$W/fix.out" 2> "$W/fix.err" < /dev/null
  local rc=$?
  if [ "$rc" = 137 ] && [[ $(rd "$W/fix.json") =~ \"oom_killed\":\ *true ]]; then
    pass "$P.fix" "systemd-run --user --scope -p Delegate=yes zygo run -m 64m: 137, oom_killed"
  else
    fail "$P.fix" "systemd-run --user --scope -p Delegate=yes zygo run -m 64m: exit $rc: $(brief "$W/fix.err")"
  fi
}

. "$HERE/warm.sh"

# Each check, timed: the lane runs under TCG, where every process costs ~10x.
TIMES=""
START=$(now)
for c in check_place check_run_true check_emptied_root check_oom check_pids check_cpu show_plan show_unlimited \
         check_doctor check_fix check_warm; do
  t0=$(now)
  "$c"
  TIMES="$TIMES ${c#check_}=$(elapsed "$t0")s"
done
info "$P: checks took $(elapsed "$START")s:$TIMES"
