# shellcheck shell=bash
# Shared by the Debian-based images (python, node): one layer made by mmdebstrap
# --variant=essential with the merged-usr hook, from the Debian mirror the host's apt uses.

DEBIAN_SUITE=bookworm
DEBIAN_CONFIG_ENV='"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]'

# debian_mirror: ZYGO_DEBIAN_MIRROR, else the URI of the host's apt source for the suite itself
# (not -updates or -security), else deb.debian.org.
debian_mirror() {
  if [[ -n ${ZYGO_DEBIAN_MIRROR:-} ]]; then
    echo "$ZYGO_DEBIAN_MIRROR"
    return
  fi
  local found
  found=$(
    {
      # deb822 files: one paragraph per source; take URIs of a paragraph whose Suites has ours.
      for f in /etc/apt/sources.list.d/*.sources; do
        [[ -r $f ]] && awk -v suite="$DEBIAN_SUITE" 'BEGIN { RS = "" } {
          uri = ""; ok = 0
          n = split($0, lines, "\n")
          for (i = 1; i <= n; i++) {
            if (lines[i] ~ /^URIs:/) { split(lines[i], w, /[ \t]+/); uri = w[2] }
            if (lines[i] ~ /^Suites:/) {
              m = split(lines[i], s, /[ \t]+/)
              for (j = 2; j <= m; j++) if (s[j] == suite) ok = 1
            }
          }
          if (ok && uri != "") print uri
        }' "$f"
      done
      # One-line format: deb [options] URI SUITE COMPONENTS...
      for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -r $f ]] && sed -E -n \
          "s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]]+${DEBIAN_SUITE}[[:space:]].*/\2/p" "$f"
      done
    } | head -n 1
  )
  echo "${found:-http://deb.debian.org/debian}"
}

inputs_debian() {
  echo "suite=$DEBIAN_SUITE mirror=$(debian_mirror)"
  dpkg-query -W -f='${Version}\n' mmdebstrap 2>/dev/null || true
}

# debian_image OUT PACKAGES CMD_JSON [HOOK]: one-layer image of the essential set plus
# PACKAGES (comma-separated), with the Debian PATH and Cmd CMD_JSON. HOOK, when given, is
# one more mmdebstrap --customize-hook (a shell command; "$1" is the root).
debian_image() {
  local out=$1 packages=$2 cmd=$3 hook=${4:-true} root=$WORK/rootfs mirror
  mirror=$(debian_mirror)
  if [[ $(id -u) -ne 0 ]]; then
    log "building Debian images needs root (mmdebstrap root mode)"
    return 1
  fi
  log "mmdebstrap $DEBIAN_SUITE + $packages from $mirror (about a minute)"
  # Docs, man pages and translations are dropped (as in Docker's debian:*-slim); copyright
  # files stay. resolv.conf and hostname are copied from the host by mmdebstrap: drop them so
  # the result does not depend on the machine (runtimes provide their own).
  # shellcheck disable=SC2016  # $1 is expanded by mmdebstrap's hook shell
  mmdebstrap --quiet --mode=root --variant=essential --include="$packages" \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --customize-hook='rm -f "$1/etc/resolv.conf" "$1/etc/hostname"' \
    --customize-hook="$hook" \
    "$DEBIAN_SUITE" "$root" "$mirror" >"$WORK/mmdebstrap.log" 2>&1 || {
    log "mmdebstrap failed:"
    tail -n 40 "$WORK/mmdebstrap.log" >&2
    return 1
  }
  debian_strip "$root"
  make_layer_tar "$root" "$WORK/layer.tar" --keep-owners
  oci image "$out" --ref latest --layer "$WORK/layer.tar" \
    --created-by "mmdebstrap --variant=essential --include=$packages $DEBIAN_SUITE" \
    --config "{$DEBIAN_CONFIG_ENV,\"Cmd\":$cmd}" >/dev/null
}

# debian_strip ROOT: removes what a container image must not carry.
debian_strip() {
  local root=$1
  # mmdebstrap unmounts everything before it exits; refuse to delete through a leftover mount.
  if findmnt -rn -o TARGET | grep -q -F "$root"; then
    log "something is still mounted under $root; not touching it"
    return 1
  fi
  # Device nodes: a rootless unpack must refuse them, and runtimes mount their own /dev.
  find "$root/dev" -xdev -mindepth 1 -delete
  # No compiled bytecode, as in the official python images: the stdlib ships .py only (what
  # zygo's bytecode layer is for), and .pyc files embed build-time source mtimes.
  find "$root" -xdev -depth -type d -name __pycache__ -exec rm -rf {} +
  find "$root" -xdev -type f -name '*.pyc' -delete
  if [[ -n $(find "$root" -xdev \( -type b -o -type c -o -type p -o -type s \) -print -quit) ]]; then
    log "device nodes, fifos or sockets left in $root"
    return 1
  fi
}
