# Shared by the shell tests: a scratch directory ($tmp) and named checks that are counted,
# so one failure does not hide the next. Source it, call `check DESCRIPTION COMMAND...`
# for each check, and end with `finish NAME`.
if [[ -n ${TEST_TMPDIR:-} ]]; then
  tmp=$TEST_TMPDIR
else
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
fi
failures=0

check() {  # check DESCRIPTION COMMAND...
  if "${@:2}"; then
    echo "ok: $1"
  else
    echo "FAILED: $1" >&2
    failures=$((failures + 1))
  fi
}

finish() {  # finish TEST_NAME: reports and sets the exit status
  echo "$1: $failures failure(s)"
  ((failures == 0))
}
