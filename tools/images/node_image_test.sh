#!/usr/bin/env bash
# The opt-in `node` test image (Debian's nodejs) under `zygo run`: built with
# tools/images/build (a cache hit after the first time), loaded into a fresh store, and
# node run in it. A host that cannot build it (not root, no Debian mirror) skips with the
# reason, as the C++ tests of the Debian images do.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=testing/sh/checks.sh
source "$here/../../testing/sh/checks.sh"
zygo=$here/../../cli/zygo

if ! built=$("$here/build" node 2>"$tmp/build.log"); then
  echo "SKIPPED: tools/images/build node failed (needs root and the Debian mirror):"
  tail -n 5 "$tmp/build.log"
  exit 0
fi
image=$(sed -n 's/^IMAGE=\([^ ]*\) .*/\1/p' <<<"$built")
export ZYGO_HOME=$tmp/store

check "zygo load the node image" "$zygo" load "$image" node:test
check "node -e prints 1" test "$("$zygo" run node:test node -e 'console.log(1)')" = 1
# The image's own node (Debian bookworm's 18), not the host's.
check "the image's node is Debian's 18" \
  grep -q '^v18\.' <<<"$("$zygo" run node:test node --version)"
# Builtins that load native parts of libnode (OpenSSL, zlib, the HTTP parser) work.
check "crypto, zlib and http load" test "$("$zygo" run node:test node -e '
const crypto = require("crypto"), zlib = require("zlib");
require("http");
const text = zlib.gunzipSync(zlib.gzipSync("zygo")).toString();
console.log(text, crypto.createHash("sha256").update(text).digest("hex").slice(0, 8));
')" = "zygo $(printf zygo | sha256sum | cut -c1-8)"
check "the image's Cmd is node" \
  grep -q '"Cmd":\["node"\]' <<<"$(tr -d ' \n' <<<"$(skopeo inspect --config "oci:$image")")"

finish node_image_test
