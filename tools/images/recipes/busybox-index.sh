# shellcheck shell=bash
# busybox-index: an OCI image index tagged "latest" with linux/amd64 and linux/arm64/v8 entries.
# Both use the same (amd64) busybox layer; only the arm64 config differs. For platform
# selection tests only: the arm64 entry does not run anywhere.

inputs_busybox_index() {
  inputs_busybox
}

build_busybox_index() {
  local out=$1 amd64 arm64
  busybox_rootfs "$WORK/rootfs"
  make_layer_tar "$WORK/rootfs" "$WORK/layer.tar"
  # The amd64 entry is byte for byte the busybox image (same manifest digest).
  amd64=$(oci image "$out" --arch amd64 --layer "$WORK/layer.tar" --config "$BUSYBOX_CONFIG" \
    --created-by "$(busybox_history)")
  arm64=$(oci image "$out" --arch arm64 --variant v8 --layer "$WORK/layer.tar" \
    --config "$BUSYBOX_CONFIG" --created-by "$(busybox_history)")
  oci index "$out" --ref latest "$amd64" "$arm64"
}
