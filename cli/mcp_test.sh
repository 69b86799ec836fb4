#!/usr/bin/env bash
# `zygo mcp` end to end: a real supervisor (zygo serve), a registered Python function, and
# mcp_test_client/mcp_test.mjs, which drives `zygo mcp` with the official MCP TypeScript SDK's
# client (installed here with `npm ci` from mcp_test_client/package-lock.json) and raw lines.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=testing/sh/checks.sh
source "$here/../testing/sh/checks.sh"
zygo=$here/zygo

if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: zygo serve's sandboxes need root here (requires_root)"
  exit 0
fi
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: run tools/setup" >&2; exit 1; }
done

# sun_path holds 108 bytes and Bazel's TEST_TMPDIR can be longer: the socket goes in /tmp,
# and the pools' code directory beside it (never inside the supervisor's own).
sockdir=$(mktemp -d /tmp/zygo-mcp-test.XXXXXX)
codedir=$(mktemp -d /tmp/zygo-mcp-code.XXXXXX)
chmod 755 "$codedir"
sock=$sockdir/zygo.sock
server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$sockdir" "$codedir"
}
trap cleanup EXIT

# The client: the SDK pinned by the lock file, installed outside the source tree. npm's
# cache is kept between runs, so only the first run on a machine downloads.
client=$tmp/client
mkdir -p "$client"
cp "$here/mcp_test_client/package.json" "$here/mcp_test_client/package-lock.json" "$here/mcp_test_client/mcp_test.mjs" \
  "$client/"
export npm_config_cache=${ZYGO_TEST_NPM_CACHE:-/var/tmp/zygo-test-npm-cache}
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
(cd "$client" && npm ci --ignore-scripts --no-progress --loglevel=error) >"$tmp/npm.log" 2>&1 || {
  echo "npm ci failed:" >&2
  cat "$tmp/npm.log" >&2
  exit 1
}

"$zygo" serve --listen "$sock" --state-dir "$sockdir/state" --no-demo >"$tmp/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
  [[ -S $sock ]] && break
  sleep 0.1
done
[[ -S $sock ]] || { echo "the supervisor did not start:" >&2; cat "$tmp/serve.log" >&2; exit 1; }

mkdir -p "$tmp/greet"
cat >"$tmp/greet/handler.py" <<'EOF'
def main(event):
    return "hello, " + event["name"]
EOF
cat >"$tmp/greet/greet.toml" <<'EOF'
name = "greet"
entry = "handler.py:main"
EOF
"$zygo" up --socket "$sock" "$tmp/greet/greet.toml"

"$zygo" mcp --help >"$tmp/help.out"
check "zygo mcp --help names the four tools" \
  grep -q "run_python.*run_javascript" <(tr '\n' ' ' <"$tmp/help.out")
check "zygo --help lists mcp" grep -q "^  mcp " <("$zygo" --help)
rc=0
"$zygo" mcp --net egress 2>"$tmp/badflag.err" </dev/null || rc=$?
check "a bad flag: exit 125" test "$rc" = 125
check "a bad flag: says why" grep -q -- "--net egress needs at least one --allow" "$tmp/badflag.err"

check "the MCP TypeScript SDK's client, and raw lines" \
  node --test-reporter=spec "$client/mcp_test.mjs" "$zygo" "$sock" "$codedir"
finish mcp_test
