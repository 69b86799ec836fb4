#!/usr/bin/env bash
# The workflow-engine example against a real supervisor: four jobs in a queue directory (a
# Python script, a JavaScript one, a script that raises, a job in a language nobody runs),
# `worker.py --once` through the Python SDK, and each job's answer in done/.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# In /tmp: a unix socket path must be short, and TEST_TMPDIR is not.
work=$(mktemp -d /tmp/workflow.XXXXXX)
supervisor_pid=""
cleanup() {
  [ -n "$supervisor_pid" ] && kill "$supervisor_pid" 2>/dev/null && wait "$supervisor_pid" || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- supervisor log"; tail -40 "$work/supervisor.log"; exit 1; }

"$root/supervisor/supervisor" --listen "$work/zygo.sock" --state-dir "$work/state" --no-demo \
  >"$work/supervisor.log" 2>&1 &
supervisor_pid=$!
for _ in $(seq 100); do [ -S "$work/zygo.sock" ] && break; sleep 0.1; done
[ -S "$work/zygo.sock" ] || fail "the supervisor did not start"

queue=$work/queue
mkdir -p "$queue/incoming"
cat >"$queue/incoming/1-python.json" <<'JOB'
{"language": "python", "code": "def handler(event):\n    print('doubling', event)\n    return event * 2\n", "input": 21}
JOB
cat >"$queue/incoming/2-javascript.json" <<'JOB'
{"language": "javascript", "code": "function handler(event) { return { upper: event.toUpperCase() }; }\n", "input": "ada"}
JOB
cat >"$queue/incoming/3-raises.json" <<'JOB'
{"language": "python", "code": "def handler(event):\n    raise ValueError('bad input')\n", "input": null}
JOB
cat >"$queue/incoming/4-cobol.json" <<'JOB'
{"language": "cobol", "code": "DISPLAY 'HI'.", "input": null}
JOB

# The SDK as a checkout has it: sdk/python on the path (no install needed for the example).
PYTHONPATH="$root/sdk/python" /usr/bin/python3 "$here/worker.py" --queue "$queue" --once \
  --socket "$work/zygo.sock" >"$work/worker.out" 2>&1 || { cat "$work/worker.out"; fail "worker.py failed"; }
cat "$work/worker.out"

answer() { /usr/bin/python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$queue/done/$1.json" "$2"; }
[ "$(answer 1-python 'a["ok"], a["result"], a["stdout"]')" = "(True, 42, 'doubling 21\\n')" ] ||
  fail "1-python: $(cat "$queue/done/1-python.json")"
[ "$(answer 2-javascript 'a["ok"], a["result"]')" = "(True, {'upper': 'ADA'})" ] ||
  fail "2-javascript: $(cat "$queue/done/2-javascript.json")"
[ "$(answer 3-raises 'a["ok"], a["error"]["type"], a["error"]["message"], a["status"]')" = \
  "(False, 'ValueError', 'bad input', 'handler_error')" ] ||
  fail "3-raises: $(cat "$queue/done/3-raises.json")"
[ "$(answer 4-cobol 'a["ok"], a["error"]["type"]')" = "(False, 'JobError')" ] ||
  fail "4-cobol: $(cat "$queue/done/4-cobol.json")"
# Every job was claimed and answered: nothing left in the queue.
[ -z "$(find "$queue/incoming" "$queue/running" -type f)" ] || fail "jobs left: $(ls -R "$queue")"
echo "PASS: four jobs answered"
