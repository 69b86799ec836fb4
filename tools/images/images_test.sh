#!/usr/bin/env bash
# Checks the fast test images: reproducible, readable by skopeo, and unpacked by umoci (an
# independent implementation) into the trees tools/images/README.md promises.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=testing/sh/checks.sh
source "$here/../../testing/sh/checks.sh"
quiet() {
  "$@" >/dev/null
}

"$here/check-reproducible"
"$here/build" all "$tmp/images" >"$tmp/built"
cat "$tmp/built"
digest_of() { grep "^IMAGE=$tmp/images/$1[ /]" "$tmp/built" | sed 's/.* DIGEST=\([^ ]*\).*/\1/'; }

for name in busybox busybox-multilayer busybox-index; do
  check "skopeo inspect oci:$name" quiet skopeo inspect "oci:$tmp/images/$name"
done
check "skopeo inspect docker-archive" \
  quiet skopeo inspect "docker-archive:$tmp/images/busybox-docker/busybox.tar"
check "skopeo copy oci -> docker-archive" skopeo --insecure-policy copy --quiet \
  "oci:$tmp/images/busybox" "docker-archive:$tmp/copy.tar:busybox:latest"
arm64=$(skopeo inspect --override-arch arm64 "oci:$tmp/images/busybox-index" | grep -c '"Architecture": "arm64"')
check "the index has an arm64 entry" test "$arm64" = 1
amd64=$(skopeo inspect --raw "oci:$tmp/images/busybox-index" | grep -o 'sha256:[0-9a-f]*' | head -n 1)
check "the index's amd64 entry is the busybox image" test "$amd64" = "$(digest_of busybox)"

rootless=()
[[ $(id -u) -eq 0 ]] || rootless=(--rootless)
umoci unpack "${rootless[@]}" --image "$tmp/images/busybox:latest" "$tmp/bb" >/dev/null
check "busybox runs from the umoci rootfs" \
  test "$("$tmp/bb/rootfs/bin/busybox" echo works)" = works
check "busybox has /tmp 1777" test "$(stat -c %a "$tmp/bb/rootfs/tmp")" = 1777

umoci unpack "${rootless[@]}" --image "$tmp/images/busybox-multilayer:latest" "$tmp/ml" >/dev/null
root=$tmp/ml/rootfs
check "whiteout removed etc/removed-by-layer2" test ! -e "$root/etc/removed-by-layer2"
check "etc/kept survives" test -f "$root/etc/kept"
check "opaque dir holds only layer 2's file" test "$(ls -A "$root/opaque")" = from-layer2
check "replaced is a directory" test -f "$root/replaced/from-layer3"
check "/work exists" test -d "$root/work"
check "no whiteout files leak" test -z "$(find "$root" -name '.wh.*')"
config=$(skopeo inspect --config "oci:$tmp/images/busybox-multilayer")
check "multilayer config" grep -q '"User":"1000:1000"' <<<"$(tr -d ' \n' <<<"$config")"

check "skopeo inspect oci:python-host" quiet skopeo inspect "oci:$tmp/images/python-host"
umoci unpack "${rootless[@]}" --image "$tmp/images/python-host:latest" "$tmp/py" >/dev/null
root=$tmp/py/rootfs
check "python-host has its own libpython" test -f "$root/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"
check "python-host has the interpreter" test -x "$root/usr/bin/python3.11"
check "python-host has the marker module" \
  test -n "$(find "$root/usr/lib" -name zygo_image_marker.py)"

finish images_test
