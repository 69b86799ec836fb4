# shellcheck shell=bash disable=SC2154  # RC, P, W, WRAP, MODE: checks.sh's
# The warm path (sourced by checks.sh): a supervisor serves fn/handler.py with 64M and 16
# pids per request; two requests at once each run in a cgroup of their own with those
# limits, one request over its memory limit is killed and the next one is served.

# zx NAME EVENT: `zygo exec --json $FN` (default v2fn) over the socket, from here (the
# client is never wrapped: it only talks to the socket). $W/NAME.out holds the reply,
# ${RC[NAME]} its exit.
zx() {
  timeout -k 5 150 "$ZYGO" exec --socket "$SOCK" --json "${FN:-v2fn}" --data "$2" \
    > "$W/$1.out" 2> "$W/$1.err" < /dev/null
  RC[$1]=$?
  return "${RC[$1]}"  # for a caller that waits on it in the background
}

# Starts `zygo serve` in the place; 0 when its socket answers, 1 when it exited (its exit
# code in ${RC[serve]}), 2 when it neither answered nor exited in time.
start_supervisor() {
  SOCK=$W/zygo.sock
  rm -f "$SOCK"
  # shellcheck disable=SC2086
  $WRAP "$ZYGO" serve --listen "$SOCK" --state-dir "$W/state" --no-demo \
    > "$W/serve.out" 2> "$W/serve.err" < /dev/null &
  SPID=$!
  for _ in $(seq 240); do
    if [ -S "$SOCK" ] && "$ZYGO" ls --socket "$SOCK" > /dev/null 2>&1; then return 0; fi
    if ! kill -0 "$SPID" 2> /dev/null; then
      wait "$SPID"
      RC[serve]=$?
      return 1
    fi
    sleep 0.5
  done
  return 2
}

stop_supervisor() {
  [ -n "${SPID:-}" ] || return
  kill -TERM "$SPID" 2> /dev/null
  for _ in $(seq 60); do kill -0 "$SPID" 2> /dev/null || break; sleep 0.5; done
  if kill -0 "$SPID" 2> /dev/null; then
    info "$P: zygo serve did not stop within 30s of SIGTERM; killing it"
    kill -KILL "$SPID" 2> /dev/null
  fi
  wait "$SPID"
  info "$P: zygo serve exited $? after SIGTERM: $(brief "$W/serve.err")"
}

# The nearest cgroup at or above $1 whose memory.max is not "max", with its memory.max
# and pids.max: "PATH MEMORY PIDS" (read while the request runs: its cgroup goes after).
limited_cgroup() {
  local c=$1 mem
  while [ -n "$c" ] && [ "$c" != / ]; do
    mem=$(rd "/sys/fs/cgroup$c/memory.max")
    if [ -n "$mem" ] && [ "$mem" != max ]; then
      echo "$c $mem $(rd "/sys/fs/cgroup$c/pids.max")"
      return
    fi
    c=${c%/*}
  done
}

check_warm_own_cgroups() {
  local m1="6.1$$$RANDOM" m2="6.2$$$RANDOM" p="" c1="" c2="" l1="" l2="" c=${1:-warm-own-cgroup}
  local want_memory=${2:-$FN_MEMORY} want_pids=${3:-$FN_PIDS}
  zx w-hold1 "{\"op\": \"hold\", \"sleep\": \"$m1\"}" &
  local x1=$!
  zx w-hold2 "{\"op\": \"hold\", \"sleep\": \"$m2\"}" &
  local x2=$!
  # The first request waits for the zygote to warm (tens of seconds under TCG). Each
  # request's cgroup is read as soon as its process shows.
  for _ in $(seq 240); do
    if [ -z "$c1" ] && p=$(pgrep -fx "/bin/sleep $m1") && [ -n "$p" ]; then
      c1=$(cgroup_of "${p%%$'\n'*}") && l1=$(limited_cgroup "$c1")
    fi
    if [ -z "$c2" ] && p=$(pgrep -fx "/bin/sleep $m2") && [ -n "$p" ]; then
      c2=$(cgroup_of "${p%%$'\n'*}") && l2=$(limited_cgroup "$c2")
    fi
    [ -n "$c1" ] && [ -n "$c2" ] && break
    kill -0 "$x1" 2> /dev/null || kill -0 "$x2" 2> /dev/null || break
    sleep 0.25
  done
  wait "$x1"
  RC[w-hold1]=$?
  wait "$x2"
  RC[w-hold2]=$?
  local why="" l
  if [ -z "$c1" ] || [ -z "$c2" ]; then
    why="the two requests' processes did not both appear (exec exits ${RC[w-hold1]} ${RC[w-hold2]}): $(brief "$W/w-hold1.err") $(brief "$W/w-hold1.out")"
  elif [ -z "$l1" ] || [ -z "$l2" ]; then
    why="no memory limit on the requests' cgroup paths ($c1, $c2)"
  elif [ "${l1%% *}" = "${l2%% *}" ]; then
    why="both requests share the limited cgroup ${l1%% *}"
  else
    for l in "$l1" "$l2"; do
      [ "${l#* }" = "$want_memory $want_pids" ] ||
        why="$why ${l%% *} has memory.max, pids.max ${l#* } (want $want_memory $want_pids)"
    done
  fi
  info "$P: request cgroups $c1 and $c2 (limited: ${l1:-none}; ${l2:-none})"
  if [ -n "$why" ]; then
    fail "$P.$c" "$why"
  elif [[ $(rd "$W/w-hold1.out") != *'"ok":true'* || $(rd "$W/w-hold2.out") != *'"ok":true'* ]]; then
    fail "$P.$c" "the requests ran in their cgroups but failed: $(brief "$W/w-hold1.out")"
  else
    pass "$P.$c" "${l1%% *}, ${l2%% *}"
  fi
}

# Checks that need a serving supervisor, failed with one reason when there is none.
not_run() {
  local c
  for c in warm-own-cgroup warm-oom warm-next warm-node-up warm-node-own-cgroup warm-node-oom \
           warm-node-next; do
    fail "$P.$c" "not run: $1"
  done
}

check_warm() {
  local own=0
  SOCK=${V2L_SOCKET:-}
  SPID=""
  if [ -z "$SOCK" ]; then
    start_supervisor
    case $? in
      1)
        if [ "${RC[serve]}" = 125 ] && [ "$MODE" = refuse-ok ]; then
          judge_refusal "$P.warm-serve" serve
          info "$P: the warm checks are not run where zygo serve refuses"
        else
          fail "$P.warm-serve" "zygo serve exited ${RC[serve]}: $(brief "$W/serve.err")"
          not_run "no supervisor"
        fi
        return ;;
      2)
        fail "$P.warm-serve" "zygo serve did not answer on $SOCK within 120s: $(brief "$W/serve.err")"
        not_run "no supervisor"
        stop_supervisor
        return ;;
    esac
    own=1
    pass "$P.warm-serve"
    local l
    while IFS= read -r l; do
      [[ $l == *limits:* ]] && info "$P: zygo serve says: ${l#"${l%%[! ]*}"}"
    done < "$W/serve.out"
  fi
  mkdir -p "$W/fn"
  cp "$HERE/fn/handler.py" "$HERE/fn/v2fn.toml" "$W/fn/"
  if ! timeout 60 "$ZYGO" up --socket "$SOCK" "$W/fn/v2fn.toml" > "$W/up.out" 2> "$W/up.err"; then
    fail "$P.warm-up" "zygo up failed: $(brief "$W/up.err") $(brief "$W/up.out")"
    not_run "zygo up failed"
  else
    pass "$P.warm-up"
    check_warm_own_cgroups
    zx w-oom '{"op": "oom"}'
    if [ "${RC[w-oom]}" = 137 ] && [[ $(rd "$W/w-oom.out") == *'"oom_killed":true'* ]]; then
      pass "$P.warm-oom" "137, oom_killed"
    else
      fail "$P.warm-oom" "exec exited ${RC[w-oom]}: $(brief "$W/w-oom.err") $(brief "$W/w-oom.out")"
    fi
    zx w-next '{"op": "cg"}'
    if [ "${RC[w-next]}" = 0 ] && [[ $(rd "$W/w-next.out") == *'"ok":true'* ]]; then
      pass "$P.warm-next"
    else
      fail "$P.warm-next" "exec exited ${RC[w-next]}: $(brief "$W/w-next.err") $(brief "$W/w-next.out")"
    fi
  fi
  check_warm_node
  [ "$own" = 1 ] && stop_supervisor
}

# A Node function (fn/handler.js): each request's worker, a fresh node started ahead of it,
# runs in a cgroup of its own with the function's limits; one over its memory is killed
# and the next is served.
check_warm_node() {
  cp "$HERE/fn/handler.js" "$HERE/fn/v2node.toml" "$W/fn/"
  if ! timeout 120 "$ZYGO" up --socket "$SOCK" "$W/fn/v2node.toml" > "$W/up-node.out" 2> "$W/up-node.err"; then
    fail "$P.warm-node-up" "zygo up failed: $(brief "$W/up-node.err") $(brief "$W/up-node.out")"
    for c in warm-node-own-cgroup warm-node-oom warm-node-next; do
      fail "$P.$c" "not run: zygo up failed"
    done
    return
  fi
  pass "$P.warm-node-up"
  FN=v2node check_warm_own_cgroups warm-node-own-cgroup 67108864 32
  FN=v2node zx wn-oom '{"op": "oom"}'
  if [ "${RC[wn-oom]}" = 137 ] && [[ $(rd "$W/wn-oom.out") == *'"oom_killed":true'* ]]; then
    pass "$P.warm-node-oom" "137, oom_killed"
  else
    fail "$P.warm-node-oom" "exec exited ${RC[wn-oom]}: $(brief "$W/wn-oom.err") $(brief "$W/wn-oom.out")"
  fi
  FN=v2node zx wn-next '{"op": "cg"}'
  if [ "${RC[wn-next]}" = 0 ] && [[ $(rd "$W/wn-next.out") == *'"ok":true'* ]]; then
    pass "$P.warm-node-next"
  else
    fail "$P.warm-node-next" "exec exited ${RC[wn-next]}: $(brief "$W/wn-next.err") $(brief "$W/wn-next.out")"
  fi
}
