# shellcheck shell=bash
# python-host: a minimal Python image assembled from the host's own Python (no network): the
# interpreter, its shared libpython, a pruned stdlib, the shared libraries they and the agent
# load, and one module no host has (zygo_image_marker). ZYGO_IMAGE_PYTHON_PREFIX=/some/prefix
# builds it from that installation (bin/python3.X, lib/python3.X, lib/libpython3.X.so.1.0).

# The host's Python is the one the agent is built against (agents/python/BUILD.bazel).
PYTHON_HOST_VERSION=3.11
PYTHON_HOST_CONFIG='{"Env":["PATH=/usr/bin:/bin"],"Cmd":["python3"],"WorkingDir":"/"}'
PYTHON_HOST_LIBDIR=usr/lib/x86_64-linux-gnu
# Always shipped: what the agent itself loads (ldd bazel-bin/agents/python/zygo-agent-python).
PYTHON_HOST_AGENT_LIBS=(libc.so.6 libm.so.6 ld-linux-x86-64.so.2)
# Libraries a lib-dynload module may bring along (zlib, pyexpat, _ctypes, _ssl/_hashlib,
# _bz2, _lzma, _uuid, and glibc's compatibility stubs). A module that needs anything else
# (_sqlite3, _curses, readline, _dbm, nis, _tkinter, _crypt) is left out of the image.
PYTHON_HOST_MODULE_LIBS=(libz.so.1 libexpat.so.1 libffi.so.8 libssl.so.3 libcrypto.so.3
  libbz2.so.1.0 liblzma.so.5 libuuid.so.1 libpthread.so.0 libdl.so.2 libutil.so.1 librt.so.1)

# python_host_source: sets PH_VERSION (3.X), PH_BIN, PH_STDLIB and PH_LIBPYTHON, from
# ZYGO_IMAGE_PYTHON_PREFIX or the host's Debian python3.11 (libpython3.11 from libpython3-dev).
python_host_source() {
  local prefix=${ZYGO_IMAGE_PYTHON_PREFIX:-} candidate found=()
  if [[ -z $prefix ]]; then
    PH_VERSION=$PYTHON_HOST_VERSION
    PH_BIN=/usr/bin/python$PH_VERSION
    PH_STDLIB=/usr/lib/python$PH_VERSION
    PH_LIBPYTHON=/usr/lib/x86_64-linux-gnu/libpython$PH_VERSION.so.1.0
  else
    # Debug (d) and free-threaded (t) builds do not count, as in the agent's own search.
    for candidate in "$prefix"/lib/libpython3.*.so.1.0; do
      [[ ${candidate##*/} =~ ^libpython(3\.[0-9]+)\.so\.1\.0$ ]] && found+=("${BASH_REMATCH[1]}")
    done
    if ((${#found[@]} != 1)); then
      log "python-host: want exactly one lib/libpython3.X.so.1.0 in $prefix, found ${#found[@]}"
      return 1
    fi
    PH_VERSION=${found[0]}
    PH_BIN=$prefix/bin/python$PH_VERSION
    PH_STDLIB=$prefix/lib/python$PH_VERSION
    PH_LIBPYTHON=$prefix/lib/libpython$PH_VERSION.so.1.0
  fi
  if [[ ! -x $PH_BIN || ! -f $PH_STDLIB/os.py || ! -f $PH_LIBPYTHON ]]; then
    log "python-host: needs $PH_BIN, $PH_STDLIB/os.py and $PH_LIBPYTHON" \
      "(the host's come from libpython3-dev: run tools/setup)"
    return 1
  fi
}

# python_host_stdlib_tar: the pruned stdlib as a normalized tar on stdout (the same bytes for
# the same files, so its hash is the stdlib's cache input). Left out: test suites, IDLE,
# tkinter, turtledemo, ensurepip, the config-3.X dir (static libpython, for building
# extensions), site-packages (pip and the like: the image has only the marker there), test
# extension modules, and all bytecode: .pyc files record their source's mtime, which the
# layer resets, so they would be stale anyway (zygo's bytecode layer compiles the stdlib).
python_host_stdlib_tar() {
  (cd "$PH_STDLIB" && find . -mindepth 1 \
    \( -type d \( -name __pycache__ -o -name test -o -name tests -o -name idle_test \) -prune \) -o \
    \( -path ./idlelib -o -path ./tkinter -o -path ./turtledemo -o -path ./ensurepip -o \
    -path './config-3.*' -o -path ./site-packages -o -path ./dist-packages \) -prune -o \
    \( -name '*.pyc' -o -path './lib-dynload/_test*' -o -path './lib-dynload/_xxtestfuzz*' -o \
    -path './lib-dynload/xxlimited*' -o -path './lib-dynload/_ctypes_test*' \) -o \
    -printf '%P\0' | sort -z) |
    tar --create --file=- --directory="$PH_STDLIB" \
      --format=posix --pax-option='exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime' \
      --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
      --no-recursion --null --files-from=-
}

# python_host_needed FILE...: "SONAME PATH" for every shared library FILE... loads (ldd, so
# transitively, resolved as on the host), "SONAME not-found" for one the loader cannot find.
# libpython itself is left out: the image gets the prefix's own.
python_host_needed() {
  { ldd "$@" 2>/dev/null || true; } | awk '
    /=> not found/ { print $1, "not-found"; next }
    /=>/ && $3 ~ /^\// { print $1, $3; next }
    /^\t\/[^ ]+ \(/ { n = split($1, part, "/"); print part[n], $1 }' |
    { grep -v '^libpython' || true; } | sort -u
}

# python_host_resolve SONAME: where the host's loader finds SONAME (empty if nowhere).
python_host_resolve() {
  local dir
  for dir in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64; do
    if [[ -e $dir/$1 ]]; then
      echo "$dir/$1"
      return
    fi
  done
}

# python_host_site_dir: the site-packages directory (in the image, under /usr) that this
# Python's site module puts on sys.path: Debian's /usr/lib/python3/dist-packages, a plain
# build's /usr/lib/python3.X/site-packages.
python_host_site_dir() {
  "$PH_BIN" -S -c 'import site
print(next(p for p in site.getsitepackages(["/usr"]) if p.startswith("/usr/lib/")))'
}

# The prefix (or the host), the interpreter, libpython, the pruned stdlib and every library
# the image may ship: a change to any gives a new cache entry.
inputs_python_host() {
  # Explicit: this runs in a command substitution, where bash does not apply set -e.
  python_host_source || return 1
  echo "prefix=${ZYGO_IMAGE_PYTHON_PREFIX:-host} version=$PH_VERSION"
  sha256sum "$PH_BIN" "$PH_LIBPYTHON"
  python_host_stdlib_tar | sha256sum
  local soname path
  for soname in "${PYTHON_HOST_AGENT_LIBS[@]}" "${PYTHON_HOST_MODULE_LIBS[@]}"; do
    path=$(python_host_resolve "$soname")
    [[ -n $path ]] && echo "$soname $(sha256sum <"$path")"
  done
  python_host_needed "$PH_BIN" "$PH_LIBPYTHON" | while read -r soname path; do
    echo "$soname $(sha256sum <"$path")"
  done
}

# python_host_libs ROOT: copies into ROOT's /usr/lib/x86_64-linux-gnu every library the
# interpreter, libpython and the agent need, plus those of the lib-dynload modules whose
# libraries are all allowed; removes the other modules (logged).
python_host_libs() {
  local root=$1 soname path module ok dropped=()
  local dynload=$root/usr/lib/python$PH_VERSION/lib-dynload
  declare -A ship=() allowed=()
  for soname in "${PYTHON_HOST_AGENT_LIBS[@]}"; do
    path=$(python_host_resolve "$soname")
    [[ -n $path ]] || { log "python-host: no $soname on the host" && return 1; }
    ship[$soname]=$path
  done
  while read -r soname path; do
    [[ $path != not-found ]] || { log "python-host: $PH_BIN needs $soname, not found" && return 1; }
    ship[$soname]=$path
  done < <(python_host_needed "$PH_BIN" "$PH_LIBPYTHON")
  for soname in "${PYTHON_HOST_MODULE_LIBS[@]}"; do
    allowed[$soname]=1
  done
  for module in "$dynload"/*.so; do
    [[ -e $module ]] || continue
    ok=1
    declare -A wants=()
    while read -r soname path; do
      if [[ $path == not-found || (-z ${ship[$soname]:-} && -z ${allowed[$soname]:-}) ]]; then
        ok=0
      fi
      wants[$soname]=$path
    done < <(python_host_needed "$module")
    if ((ok)); then
      for soname in "${!wants[@]}"; do
        ship[$soname]=${wants[$soname]}
      done
    else
      dropped+=("${module##*/}")
      rm -f "$module"
    fi
    unset wants
  done
  for soname in "${!ship[@]}"; do
    cp -L "${ship[$soname]}" "$root/$PYTHON_HOST_LIBDIR/$soname"
    chmod 0644 "$root/$PYTHON_HOST_LIBDIR/$soname"
  done
  chmod 0755 "$root/$PYTHON_HOST_LIBDIR/ld-linux-x86-64.so.2"
  ln -s ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$root/usr/lib64/ld-linux-x86-64.so.2"
  log "python-host: ${#ship[@]} libraries; modules left out (their libraries are not shipped):" \
    "${dropped[*]:-none}"
}

# build_python_host OUT: OCI layout, tag "latest", one layer.
build_python_host() {
  local out=$1 root=$WORK/rootfs dir site
  python_host_source
  log "python-host: python$PH_VERSION from ${ZYGO_IMAGE_PYTHON_PREFIX:-the host}"
  for dir in "" usr usr/bin usr/lib usr/lib64 "$PYTHON_HOST_LIBDIR" "usr/lib/python$PH_VERSION" \
    etc dev; do
    put_dir "$root/$dir" 0755
  done
  put_dir "$root/proc" 0555
  put_dir "$root/tmp" 1777
  put_dir "$root/root" 0700
  # Merged /usr, as in Debian: the ELF interpreter is /lib64/ld-linux-x86-64.so.2.
  ln -s usr/bin "$root/bin"
  ln -s usr/lib "$root/lib"
  ln -s usr/lib64 "$root/lib64"
  put_file "$root/etc/passwd" 0644 'root:x:0:0:root:/root:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
'
  put_file "$root/etc/group" 0644 'root:x:0:
nogroup:x:65534:
'
  cp "$PH_BIN" "$root/usr/bin/python$PH_VERSION"
  chmod 0755 "$root/usr/bin/python$PH_VERSION"
  ln -s "python$PH_VERSION" "$root/usr/bin/python3"
  cp "$PH_LIBPYTHON" "$root/$PYTHON_HOST_LIBDIR/libpython$PH_VERSION.so.1.0"
  chmod 0644 "$root/$PYTHON_HOST_LIBDIR/libpython$PH_VERSION.so.1.0"
  python_host_stdlib_tar | tar --extract --file=- --preserve-permissions \
    --directory="$root/usr/lib/python$PH_VERSION"
  python_host_libs "$root"
  site=$(python_host_site_dir)
  put_dir "$root$site" 0755
  put_file "$root$site/zygo_image_marker.py" 0644 $'WHERE = "python-host image"\n'
  make_layer_tar "$root" "$WORK/layer.tar"
  log "python-host: layer $(($(stat -c %s "$WORK/layer.tar") / 1048576)) MiB uncompressed"
  oci image "$out" --ref latest --layer "$WORK/layer.tar" --config "$PYTHON_HOST_CONFIG" \
    --created-by "tools/images: python$PH_VERSION from ${ZYGO_IMAGE_PYTHON_PREFIX:-the host}" \
    >/dev/null
}
