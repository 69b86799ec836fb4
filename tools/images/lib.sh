# shellcheck shell=bash
# Helpers shared by the image recipes: a fixed build environment and reproducible layer tarballs.
# Sourced by tools/images/build; JSON assembly lives in oci.py beside it.

# Every timestamp in every image is this instant (2023-11-14T22:13:20Z), so two builds of the
# same inputs give the same bytes. Deliberately not taken from the caller's environment.
export SOURCE_DATE_EPOCH=1700000000
# Byte-wise sorting and UTC everywhere: locale and zone must not leak into tar order or dates.
export LC_ALL=C TZ=UTC
umask 022

# Debian's python, never a pyenv shim on PATH (slow, and a different interpreter per machine).
PYTHON=/usr/bin/python3

# oci ARGS...: runs oci.py (layout, config, manifest and index JSON).
oci() {
  "$PYTHON" "$IMAGES_DIR/oci.py" "$@"
}

# make_layer_tar ROOT OUT_TAR [--keep-owners]: archives the contents of ROOT (not ROOT itself)
# into an uncompressed tar whose bytes depend only on the tree: entries sorted byte-wise, every
# mtime SOURCE_DATE_EPOCH, no atime/ctime, no user/group names, and a fixed name for pax
# extended headers (GNU tar's default embeds the pid). Owners become 0:0 unless --keep-owners,
# which keeps numeric ids (a Debian root has root:shadow files and the like).
make_layer_tar() {
  local root=$1 out=$2
  local owners=(--owner=0 --group=0)
  if [[ ${3:-} == --keep-owners ]]; then
    owners=()
  fi
  (cd "$root" && find . -mindepth 1 -printf '%P\0' | sort -z) |
    tar --create --file="$out" --directory="$root" \
      --format=posix --pax-option='exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime' \
      --mtime="@$SOURCE_DATE_EPOCH" "${owners[@]}" --numeric-owner \
      --no-recursion --null --files-from=-
}

# put_file PATH MODE CONTENT: writes CONTENT to PATH with an explicit mode (umask-independent).
put_file() {
  mkdir -p "$(dirname "$1")"
  printf '%s' "$3" >"$1"
  chmod "$2" "$1"
}

# put_dir PATH MODE: creates PATH with an explicit mode.
put_dir() {
  mkdir -p "$1"
  chmod "$2" "$1"
}

log() {
  echo "images: $*" >&2
}
