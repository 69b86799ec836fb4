# shellcheck shell=bash
# python-apt: the python-pip image plus Debian's apt, for zygo's system packages (a spec's
# `system = [...]`, `zygo run --system`), which are installed with the image's own apt. Its
# one apt source is `deb [trusted=yes] http://deb.debian.org/debian bookworm main`: the
# tests serve a fake, unsigned mirror under that name on their fake internet
# (testing/fake_internet.h), so trusted=yes lets apt take it. A test image only: never
# use it where deb.debian.org is the real one. One layer, no .pyc files. Opt-in, cached.

PYTHON_APT_SOURCE='deb [trusted=yes] http://deb.debian.org/debian bookworm main'

inputs_python_apt() {
  inputs_debian
  echo "source=$PYTHON_APT_SOURCE"
}

build_python_apt() {
  # The host's mirror built it; the image's own apt looks at PYTHON_APT_SOURCE only.
  # shellcheck disable=SC2016  # $1 is expanded by mmdebstrap's hook shell
  debian_image "$1" python3,python3-pip,libpython3.11,apt '["python3"]' \
    'rm -f "$1"/etc/apt/sources.list.d/* && echo "'"$PYTHON_APT_SOURCE"'" >"$1/etc/apt/sources.list"'
}
