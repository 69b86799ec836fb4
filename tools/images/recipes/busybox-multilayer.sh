# shellcheck shell=bash
# busybox-multilayer: three layers exercising whiteouts, an opaque directory and a file replaced
# by a directory, with a config using Env, WorkingDir, Entrypoint, Cmd and User.
# What a test should observe is listed in tools/images/README.md.

inputs_busybox_multilayer() {
  inputs_busybox
}

build_busybox_multilayer() {
  local out=$1 l1=$WORK/layer1 l2=$WORK/layer2 l3=$WORK/layer3
  # Layer 1: busybox plus the files the later layers delete, hide or replace.
  busybox_rootfs "$l1"
  put_file "$l1/etc/removed-by-layer2" 0644 $'layer1\n'
  put_file "$l1/etc/kept" 0644 $'layer1\n'
  put_file "$l1/opaque/from-layer1" 0644 $'layer1\n'
  put_file "$l1/opaque/sub/deep" 0644 $'layer1\n'
  chmod 0755 "$l1/opaque" "$l1/opaque/sub"
  put_file "$l1/replaced" 0644 $'file from layer1\n'

  # Layer 2: a whiteout for one file, an opaque /opaque with one new file, and /work.
  put_dir "$l2/etc" 0755
  put_file "$l2/etc/.wh.removed-by-layer2" 0644 ''
  put_dir "$l2/opaque" 0755
  put_file "$l2/opaque/.wh..wh..opq" 0644 ''
  put_file "$l2/opaque/from-layer2" 0644 $'layer2\n'
  put_dir "$l2/work" 0755

  # Layer 3: /replaced, a regular file below, becomes a directory.
  put_dir "$l3/replaced" 0755
  put_file "$l3/replaced/from-layer3" 0644 $'layer3\n'

  local n
  for n in 1 2 3; do
    make_layer_tar "$WORK/layer$n" "$WORK/layer$n.tar"
  done
  oci image "$out" --ref latest \
    --layer "$WORK/layer1.tar" --created-by 'tools/images: busybox and files to remove' \
    --layer "$WORK/layer2.tar" --created-by 'tools/images: whiteout, opaque dir, /work' \
    --layer "$WORK/layer3.tar" --created-by 'tools/images: file replaced by a directory' \
    --config '{"Env":["PATH=/bin","FOO=bar"],"Entrypoint":["/bin/sh","-c"],"Cmd":["echo hello"],"WorkingDir":"/work","User":"1000:1000"}' \
    >/dev/null
}
