# Shared helpers of the v2 lane's guest scripts (sourced, never run).
# Every check prints exactly one line: "PASS name" or "FAIL name: why". "INFO ..." lines
# are facts for the reader (cgroup paths, owners, what doctor said), never counted.
# Under qemu TCG every exec costs ~0.1-0.3 s, so these use bash builtins where they can.

pass() { echo "PASS $1${2:+ ($2)}"; }
fail() { echo "FAIL $1: $2"; }
info() { echo "INFO $*"; }

# rd FILE: the file's text on one line (empty when unreadable), without a fork when the
# caller writes REPLY=...; use as "$(rd FILE)" only where the cost does not matter.
rd() {
  REPLY=""
  [ -r "$1" ] && IFS= read -r -d '' REPLY < "$1"
  REPLY=${REPLY//$'\n'/ }
  REPLY=${REPLY% }
  echo "$REPLY"
}

# The start of a file (zygo's error names the call first), on one line, for a FAIL reason.
brief() {
  local s=""
  [ -r "$1" ] && IFS= read -r -d '' s < "$1"
  s=${s//$'\n'/ }
  [ ${#s} -gt 320 ] && s="${s:0:320}..."
  echo "${s% }"
}

# The cgroup path ("/user.slice/...") of process $1 (default: this shell), as this
# cgroup namespace sees it.
cgroup_of() {
  local line=""
  read -r line < "/proc/${1:-self}/cgroup" 2> /dev/null
  echo "${line#0::}"
}

# Microseconds since the epoch; elapsed START prints seconds since START, one decimal.
now() { echo "${EPOCHREALTIME/./}"; }
elapsed() {
  local d=$(( ($(now) - $1) / 100000 ))
  echo "$((d / 10)).$((d % 10))"
}

# cgroups and units zygo may have left: any directory named zygo-*, zygote-*, request-*
# (docs/zygo-run.md's names) or a scope with "zygo" in its name; units whose name has
# "zygo" in it, other than those the lane made (v2lane-*).
leftover_cgroups() {
  find /sys/fs/cgroup -mindepth 1 -type d \
    \( -name 'zygo-*' -o -name 'zygote-*' -o -name 'request-*' -o -name '*zygo*.scope' \) \
    2> /dev/null | sed 's|^/sys/fs/cgroup||'
}
leftover_units() {
  systemctl "$@" list-units --all --no-legend --plain 2> /dev/null |
    awk 'tolower($1) ~ /zygo/ && $1 !~ /^v2lane/ {print $1}'
}

# save_work PLACE DIR: a place's work files (outcomes, replies, logs) into out/work/PLACE,
# for reading after the run; sockets and the supervisor's state stay behind.
save_work() {
  mkdir -p "$OUT/work/$1"
  tar -C "$2" -cf - --exclude='*.sock' --exclude=state . 2> /dev/null |
    tar -C "$OUT/work/$1" -xf - 2> /dev/null
}
