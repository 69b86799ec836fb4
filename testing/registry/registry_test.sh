#!/usr/bin/env bash
# End to end over the registry fixture, in each mode: serve, the /v2/ challenge, push (refused
# without credentials where auth is on), skopeo inspect of the pushed digest, stop.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
images=$(cd "$here/../../tools/images" && pwd)
# shellcheck source=testing/sh/checks.sh
source "$here/../sh/checks.sh"
fails() {
  ! "$@" >/dev/null 2>&1
}

built=$("$images/build" busybox "$tmp/busybox" 2>/dev/null)
want=${built#* DIGEST=}
want=${want%% *}

# challenge URL: prints "<status> <WWW-Authenticate>" of an anonymous GET.
challenge() {
  /usr/bin/python3 - "$1" <<'PY'
import sys, urllib.error, urllib.request
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=5)
    print(r.status, r.headers.get("WWW-Authenticate", ""))
except urllib.error.HTTPError as e:
    print(e.code, e.headers.get("WWW-Authenticate", ""))
PY
}

for mode in anonymous basic bearer; do
  line=$("$here/serve" "$mode" --watch "$$")
  echo "$line"
  # The line is KEY=VALUE words; no value holds a space.
  declare -A r=()
  for word in $line; do
    r[${word%%=*}]=${word#*=}
  done
  registry=${r[REGISTRY]} dir=${r[DIR]} pid=${r[PID]}
  creds=()
  case $mode in
    anonymous)
      check "$mode: /v2/ answers 200" test "$(challenge "http://$registry/v2/")" = "200 "
      ;;
    basic)
      creds=(--creds "${r[CREDS]}")
      check "$mode: /v2/ challenges Basic" test "$(challenge "http://$registry/v2/")" = \
        '401 Basic realm="zygo-test-registry"'
      ;;
    bearer)
      creds=(--creds "${r[CREDS]}")
      check "$mode: /v2/ challenges Bearer" test "$(challenge "http://$registry/v2/")" = \
        "401 Bearer realm=\"${r[REALM]}\",service=\"zygo-test-registry\""
      ;;
  esac
  if [[ $mode != anonymous ]]; then
    check "$mode: push without credentials is refused" \
      fails "$here/push" "$tmp/busybox" "$registry/busybox:latest"
  fi
  pushed=$("$here/push" "$tmp/busybox" "$registry/busybox:latest" "${creds[@]}")
  check "$mode: push keeps the digest" test "$pushed" = "DIGEST=$want"
  inspect_creds=()
  if [[ $mode == basic ]]; then
    inspect_creds=(--creds "${r[CREDS]}")  # bearer: anonymous pull tokens, as on Docker Hub
  fi
  got=$(skopeo inspect --tls-verify=false "${inspect_creds[@]}" \
    --format '{{.Digest}}' "docker://$registry/busybox:latest")
  check "$mode: skopeo inspect sees the pushed digest" test "$got" = "$want"
  "$here/stop" "$dir"
  check "$mode: stop removed the directory" test ! -e "$dir"
  state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null || true)
  check "$mode: the registry has exited" test -z "$state" -o "$state" = Z
  unset r
done

finish registry_test
