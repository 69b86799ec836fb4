# shellcheck shell=bash
# busybox-docker: the busybox image as `docker save` writes it (manifest.json, repositories,
# <id>/layer.tar), in OUT/busybox.tar, for `zygo load`. Its docker image ID equals the config
# digest of the busybox OCI image.

inputs_busybox_docker() {
  inputs_busybox
}

build_busybox_docker() {
  local out=$1
  build_busybox "$WORK/oci"
  oci docker-archive "$WORK/oci" "$WORK/archive" --repo-tag busybox:latest >/dev/null
  make_layer_tar "$WORK/archive" "$out/busybox.tar"
}
