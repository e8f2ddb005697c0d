#!/usr/bin/env bash
# Builds the upstream-runtime tests' image as an OCI image layout tarball, for `ctr images import`
# (no registry is reachable): one layer holding the static xpu-container-check and the glibc and
# C++ runtime libraries a vendor library it loads needs (the fake NVML and DCMI link libstdc++;
# a real libnvidia-ml.so.1 links only glibc) - and no vendor file: those come from the CDI spec.
# Two images share the layer:
#   docker.io/xpu-dra/container-check:test   entrypoint /xpu-container-check (prints its JSON)
#   docker.io/xpu-dra/pause:test             entrypoint /xpu-container-check --pause (the pods'
#                                            sandbox image, containerd's pinned sandbox image)
# Deterministic: the same inputs give the same bytes (e2e/container/oci-layout.sh).
#
#   e2e/container/build-image.sh OUT.tar CHECK_BINARY LIBRARY...
#
# LIBRARY: shared libraries whose dependencies (ldd) go into the image (build/fake-vendor-libs/*).
set -euo pipefail
out=${1:?usage: build-image.sh OUT.tar CHECK_BINARY LIBRARY...}
check=${2:?usage: build-image.sh OUT.tar CHECK_BINARY LIBRARY...}
shift 2
work=$(mktemp -d /tmp/xpu-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs
mkdir -p "$root"/{dev,proc,sys,etc,tmp,run}
install -m 0755 "$check" "$root/xpu-container-check"
# Each dependency at the path the loader resolves it to, as a file (links followed), and in the
# multiarch folder by name: the loader itself (/lib64/ld-linux-x86-64.so.2, the program
# interpreter) is also a dependency of libc.so.6 by soname, which a dlopen from the static
# program looks up in its built-in system folders.
multiarch=$(gcc -print-multiarch 2>/dev/null || echo "$(uname -m)-linux-gnu")
mkdir -p "$root/lib/$multiarch"
deps=$(for lib in "$@"; do ldd "$lib"; done | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p' | sort -u)
for dep in $deps; do
  mkdir -p "$root$(dirname "$dep")"
  cp -L "$dep" "$root$dep"
  [ -e "$root/lib/$multiarch/$(basename "$dep")" ] || cp -L "$dep" "$root/lib/$multiarch/"
done
. "$(dirname "$0")/oci-layout.sh"
oci_layer "$work" "$root"
check_entry=$(oci_image docker.io/xpu-dra/container-check:test \
  '{"Entrypoint":["/xpu-container-check"],"Env":["PATH=/usr/bin:/bin"]}')
pause_entry=$(oci_image docker.io/xpu-dra/pause:test \
  '{"Entrypoint":["/xpu-container-check","--pause"],"Env":["PATH=/usr/bin:/bin"]}')
oci_write "$out" "$check_entry" "$pause_entry"
echo "build-image: $out ($(stat -c %s "$out") bytes; layer $oci_layer)"
