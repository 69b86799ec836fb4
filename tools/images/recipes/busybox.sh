# shellcheck shell=bash
# busybox: one layer from Debian's busybox-static; the tiny default image for fast tests.

BUSYBOX_APPLETS=(sh ls cat echo true false id env sleep mkdir touch rm wc head)
BUSYBOX_CONFIG='{"Env":["PATH=/bin"],"Cmd":["sh"],"WorkingDir":"/"}'

# The host's busybox is an input: a new busybox-static version must give a new cache entry.
inputs_busybox() {
  sha256sum /bin/busybox
}

# busybox_rootfs DIR: the busybox tree (binary, applet links, /dev /proc /tmp, passwd, group).
busybox_rootfs() {
  local root=$1 applet
  if [[ ! -x /bin/busybox ]] || ! /bin/busybox --list >/dev/null; then
    log "needs /bin/busybox from busybox-static (run tools/setup)"
    return 1
  fi
  put_dir "$root" 0755
  put_dir "$root/bin" 0755
  cp /bin/busybox "$root/bin/busybox"
  chmod 0755 "$root/bin/busybox"
  for applet in "${BUSYBOX_APPLETS[@]}"; do
    ln -s busybox "$root/bin/$applet"
  done
  put_dir "$root/dev" 0755
  put_dir "$root/proc" 0555
  put_dir "$root/tmp" 1777
  put_dir "$root/root" 0700
  put_file "$root/etc/passwd" 0644 'root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
'
  put_file "$root/etc/group" 0644 'root:x:0:
nogroup:x:65534:
'
  chmod 0755 "$root/etc"
}

# build_busybox OUT: OCI layout, tag "latest".
build_busybox() {
  local out=$1
  busybox_rootfs "$WORK/rootfs"
  make_layer_tar "$WORK/rootfs" "$WORK/layer.tar"
  oci image "$out" --ref latest --layer "$WORK/layer.tar" --config "$BUSYBOX_CONFIG" \
    --created-by "$(busybox_history)" >/dev/null
}

# busybox_history: the layer's history line (shared, so every busybox variant has one config).
busybox_history() {
  echo "tools/images: busybox-static $(dpkg-query -W -f='${Version}' busybox-static 2>/dev/null)"
}
