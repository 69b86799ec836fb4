# shellcheck shell=bash
# python: Debian bookworm's essential set plus python3 (not python3-minimal, which lacks json),
# one layer, no .pyc files. Slow (minutes, needs the Debian mirror): opt-in, and cached.

inputs_python() {
  inputs_debian
}

build_python() {
  debian_image "$1" python3 '["python3"]'
}
