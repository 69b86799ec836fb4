#!/usr/bin/env bash
# `zygo up/down/ls/exec/scripts` end to end: the real static `zygo` (its own API client),
# against a fake supervisor (testdata/fake_supervisor.py) on a unix socket.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=testing/sh/checks.sh
source "$here/../testing/sh/checks.sh"
zygo=$here/zygo

# sun_path holds 108 bytes and Bazel's TEST_TMPDIR can be longer: the socket goes in /tmp.
sockdir=$(mktemp -d /tmp/zygo-api-test.XXXXXX)
sock=$sockdir/zygo.sock
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null
  rm -rf "$sockdir"
  if [[ -z ${TEST_TMPDIR:-} ]]; then rm -rf "$tmp"; fi
}
trap cleanup EXIT

# run NAME [ARGS...]: runs zygo with stdin from $tmp/NAME.in when it exists; leaves
# $tmp/NAME.out, $tmp/NAME.err and $tmp/NAME.rc.
run() {
  local name=$1 input=/dev/null rc=0
  shift
  if [[ -f $tmp/$name.in ]]; then input=$tmp/$name.in; fi
  "$zygo" "$@" <"$input" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
  echo "$rc" >"$tmp/$name.rc"
}
rc_is() { [[ $(cat "$tmp/$1.rc") == "$2" ]] || { echo "$1: exit $(cat "$tmp/$1.rc"), want $2; stderr:" >&2; cat "$tmp/$1.err" >&2; false; }; }
out_is() { [[ $(cat "$tmp/$1.out") == "$2" ]] || { echo "$1: stdout is:" >&2; cat "$tmp/$1.out" >&2; false; }; }
err_is() { [[ $(cat "$tmp/$1.err") == "$2" ]] || { echo "$1: stderr is:" >&2; cat "$tmp/$1.err" >&2; false; }; }
err_has() { grep -qF -- "$2" "$tmp/$1.err" || { echo "$1: stderr lacks '$2':" >&2; cat "$tmp/$1.err" >&2; false; }; }
one_line() { [[ $(wc -l <"$tmp/$1.err") == 1 ]] || { echo "$1: stderr is not one line:" >&2; cat "$tmp/$1.err" >&2; false; }; }
# json_is NAME PYTHON_EXPR: the expression, over `r` (the parsed stdout), is true.
json_is() { /usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$tmp/$1.out"; }
# logged PYTHON_EXPR: true of `q`, the last request the fake supervisor received.
# The last request but the polls of GET /v1/functions (`zygo up` waits with them).
logged() { /usr/bin/python3 -c "import json,sys; q=[json.loads(l) for l in open(sys.argv[1]) if not l.startswith('{\"method\": \"GET\", \"path\": \"/v1/functions\"')][-1]; sys.exit(0 if ($1) else 1)" "$tmp/requests.log"; }

# --- no supervisor yet ------------------------------------------------------------------
export ZYGO_SOCKET=$sock
run usage --help
for command in serve up down ls exec scripts; do
  check "zygo --help lists $command" grep -q "^  $command " "$tmp/usage.out"
done
for command in up down ls exec scripts; do
  run "help-$command" "$command" --help
  check "zygo $command --help exits 0" rc_is "help-$command" 0
  check "zygo $command --help shows its usage" grep -q "^Usage: zygo $command" "$tmp/help-$command.out"
done
check "exec --help explains the exit codes" grep -q "137" "$tmp/help-exec.out"

run noserver ls
check "no supervisor: exit 125" rc_is noserver 125
check "no supervisor: the one clear line" err_is noserver \
  "zygo: cannot reach the supervisor at $sock: is \`zygo serve\` running?"
run noserver-exec exec hello
check "no supervisor (exec): exit 125" rc_is noserver-exec 125
check "no supervisor (exec): one line" one_line noserver-exec

# --- against the fake supervisor --------------------------------------------------------
PYTHONPATH="$here/../testing/python" /usr/bin/python3 "$here/testdata/fake_supervisor.py" "$sock" "$tmp/requests.log" &
server_pid=$!
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.05; done

mkdir -p "$tmp/specs/fn"
printf 'name = "hello"\nruntime = "python"\nentry = "handler.py:handle"\n' >"$tmp/specs/fn/hello.toml"
(cd "$tmp/specs" && run up up fn/hello.toml)
check "up: exit 0" rc_is up 0
check "up: says it is up" out_is up "hello is up (runtime python, image host)"
check "up: waited for it with GET /v1/functions" grep -q '"method": "GET", "path": "/v1/functions"' "$tmp/requests.log"
check "up: origin is the file name" logged 'q["query"]["origin"] == ["hello.toml"]'
check "up: base_dir is the file's absolute directory" \
  logged "q['query']['base_dir'] == ['$(cd "$tmp/specs/fn" && pwd -P)']"
check "up: the body is the TOML" logged 'q["body"].startswith("name = \"hello\"")'

printf 'runtime = "python"\n' >"$tmp/specs/broken.toml"
run up-broken up "$tmp/specs/broken.toml"
check "up of a bad spec: exit 125" rc_is up-broken 125
check "up of a bad spec: the supervisor's message" err_is up-broken "zygo: broken.toml: name: missing"
run up-missing up "$tmp/specs/nope.toml"
check "up of a missing file: exit 125, one line" rc_is up-missing 125
check "up of a missing file: names it" err_has up-missing "cannot read $tmp/specs/nope.toml"

run ls ls
check "ls: exit 0" rc_is ls 0
check "ls: header" grep -qE '^NAME +RUNTIME +IMAGE +STATE +REQUESTS +ENTRY$' "$tmp/ls.out"
check "ls: hello's row" grep -qE '^hello +python +host +warm +0 +handler.py:handle$' "$tmp/ls.out"
check "ls: a pool shows (pool)" grep -qE '^pool +python +host +warm +0 +\(pool\)$' "$tmp/ls.out"
check "ls: a function whose warm-up failed shows failed" \
  grep -qE '^unpulled +python +host +failed +0 +handler.py:handle$' "$tmp/ls.out"
check "ls: its reason on stderr, one line" err_is ls \
  "zygo: unpulled cannot warm: unpulled.toml: manifest unknown: 127.0.0.1:5000/app:2"
run ls-json ls --json
check "ls --json: the API's object" json_is ls-json \
  '"hello" in [f["name"] for f in r["functions"]] and r["functions"][0]["memory_bytes"] > 0'

run exec-data exec hello --data '{"x": 1}'
check "exec --data: exit 0" rc_is exec-data 0
check "exec --data: captured stdout, then the result" out_is exec-data \
  "$(printf 'handler says hi\n{"event":{"x":1},"script":null}')"
check "exec --data: captured stderr" err_is exec-data "handler warns"
check "exec --data: sent as the body" logged 'q["body"] == "{\"x\": 1}"'

echo '{"from": "stdin"}' >"$tmp/exec-stdin.in"
run exec-stdin exec hello -
check "exec -: exit 0" rc_is exec-stdin 0
check "exec -: the event came from stdin" grep -qF '{"event":{"from":"stdin"}' "$tmp/exec-stdin.out"

run exec-null exec hello
check "exec: the default event is null" grep -qF '{"event":null' "$tmp/exec-null.out"
check "exec: the default body is empty" logged 'q["body"] == "" and q["method"] == "POST"'

run exec-json exec --json hello --data 7
check "exec --json: exit 0" rc_is exec-json 0
check "exec --json: the whole reply" json_is exec-json \
  'r["ok"] and r["result"]["event"] == 7 and r["stdout"] == "handler says hi\n" and "total" in r["timings_us"]'
check "exec --json: nothing else on stderr" err_is exec-json ""

run exec-raise exec raiser
check "handler raised: exit 1" rc_is exec-raise 1
check "handler raised: the traceback" err_has exec-raise "Traceback (most recent call last):"
check "handler raised: error: Type: message" err_has exec-raise "error: ValueError: bad input"
run exec-raise-json exec raiser --json
check "handler raised, --json: still exit 1" rc_is exec-raise-json 1
check "handler raised, --json: the error object" json_is exec-raise-json 'r["error"]["type"] == "ValueError"'

run exec-slow exec slow
check "timeout: exit 137" rc_is exec-slow 137
check "timeout: says so" err_is exec-slow "zygo: slow was killed: it timed out after 1000 ms"
run exec-hog exec hog
check "oom: exit 137" rc_is exec-hog 137
check "oom: says so" err_is exec-hog "zygo: hog was killed: out of memory (peak RSS 262144 kB)"

run exec-exit3 exec exit3
check "exec function: its own exit code" rc_is exec-exit3 3
check "exec function: its stderr" err_is exec-exit3 "exiting 3"
printf 'raw\001bytes' >"$tmp/exec-cat.in"
run exec-cat exec cat -
check "exec function: stdin bytes round trip" cmp "$tmp/exec-cat.in" "$tmp/exec-cat.out"

# The server answers 413 and closes while zygo still writes the body: zygo must show that
# answer, not the EPIPE its write got. Control: an event at the limit goes through.
head -c 1048576 /dev/zero | tr '\0' 'x' >"$tmp/exec-limit.in"
run exec-limit exec cat -
check "an event at the limit: exit 0" rc_is exec-limit 0
check "an event at the limit: all of it arrived" cmp "$tmp/exec-limit.in" "$tmp/exec-limit.out"
head -c 8388608 /dev/zero | tr '\0' 'x' >"$tmp/exec-big.in"
run exec-big exec cat -
check "an event over the limit: exit 125" rc_is exec-big 125
check "an event over the limit: the supervisor's 413, in one line" err_is exec-big \
  "zygo: event is 8388608 bytes; the limit is 1048576 bytes"

run exec-unknown exec nope
check "unknown function: exit 125" rc_is exec-unknown 125
check "unknown function: one clear line" err_is exec-unknown "zygo: no function named nope"
run exec-badjson exec hello --data '{oops'
check "bad event: exit 125" rc_is exec-badjson 125
check "bad event: one line" one_line exec-badjson
run exec-both exec hello --data 1 -
check "--data and - together: exit 125" rc_is exec-both 125
run exec-flag exec hello --bogus
check "unknown flag: exit 125, one line" one_line exec-flag
check "unknown flag: names it" err_has exec-flag "unknown flag --bogus"

printf 'def handle(event):\n    return 1\n' >"$tmp/script.py"
run put scripts put "$tmp/script.py"
check "scripts put: exit 0" rc_is put 0
check "scripts put: prints the digest" out_is put "sha256:$(sha256sum "$tmp/script.py" | cut -d' ' -f1)"
run exec-script exec pool --script "$(cat "$tmp/put.out")"
check "exec --script: the digest reaches the API" grep -qF "\"script\":\"$(cat "$tmp/put.out")\"" "$tmp/exec-script.out"

ZYGO_SOCKET=/nonexistent/zygo.sock run flag-socket ls --socket "$sock"
check "--socket beats \$ZYGO_SOCKET" rc_is flag-socket 0

run down down hello
check "down: exit 0" rc_is down 0
check "down: says so" out_is down "hello is down"
check "down: DELETE /v1/functions/hello" logged 'q["method"] == "DELETE" and q["path"] == "/v1/functions/hello"'
run down-again down hello
check "down of an unknown function: exit 125" rc_is down-again 125
check "down of an unknown function: one clear line" err_is down-again "zygo: no function named hello"

finish api_cli_test
