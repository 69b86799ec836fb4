# shellcheck shell=bash
# node: Debian bookworm's essential set plus nodejs, one layer. Slow: opt-in, and cached.

inputs_node() {
  inputs_debian
}

build_node() {
  debian_image "$1" nodejs '["node"]'
}
