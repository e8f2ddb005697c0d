#!/usr/bin/env bash
# Builds the upstream-runtime tests' image as an OCI image layout tarball, for `ctr images import`
# (no registry is reachable): one layer holding the static xpu-container-check and the glibc and
# C++ runtime libraries a vendor library it loads needs (the fake NVML and DCMI link libstdc++;
# a real libnvidia-ml.so.1 links only glibc) - and no vendor file: those come from the CDI spec.
# Two images share the layer:
#   docker.io/xpu-dra/container-check:test   entrypoint /xpu-container-check (prints its JSON)
#   docker.io/xpu-dra/pause:test             entrypoint /xpu-container-check --pause (the pods'
#                                            sandbox image, containerd's pinned sandbox image)
# Deterministic: the same inputs give the same bytes (sorted tar, zero times and owners).
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
mkdir -p "$root"/{dev,proc,sys,etc,tmp,run} "$work/blobs/sha256"
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
arch=$(uname -m)
case "$arch" in x86_64) oci_arch=amd64 ;; aarch64) oci_arch=arm64 ;; *) oci_arch=$arch ;; esac

blob() {  # blob FILE: moves it into blobs/, prints "sha256:<hex> <size>"
  local sum size
  sum=$(sha256sum "$1" | cut -d' ' -f1)
  size=$(stat -c %s "$1")
  mv "$1" "$work/blobs/sha256/$sum"
  echo "sha256:$sum $size"
}
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$root" -cf "$work/layer.tar" .
read -r layer layer_size < <(blob "$work/layer.tar")

manifest() {  # manifest NAME ENTRYPOINT_JSON: prints the index entry of one image
  local name=$1 entrypoint=$2 config manifest config_size manifest_size
  printf '{"architecture":"%s","os":"linux","config":{"Entrypoint":%s,"Env":["PATH=/usr/bin:/bin"]},"rootfs":{"type":"layers","diff_ids":["%s"]}}' \
    "$oci_arch" "$entrypoint" "$layer" >"$work/config.json"
  read -r config config_size < <(blob "$work/config.json")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"%s","size":%s}]}' \
    "$config" "$config_size" "$layer" "$layer_size" >"$work/manifest.json"
  read -r manifest manifest_size < <(blob "$work/manifest.json")
  printf '{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"test"}}' \
    "$manifest" "$manifest_size" "$oci_arch" "$name"
}
check_entry=$(manifest docker.io/xpu-dra/container-check:test '["/xpu-container-check"]')
pause_entry=$(manifest docker.io/xpu-dra/pause:test '["/xpu-container-check","--pause"]')
printf '{"schemaVersion":2,"manifests":[%s,%s]}' "$check_entry" "$pause_entry" >"$work/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' >"$work/oci-layout"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work" -cf "$out.tmp" \
  oci-layout index.json blobs
mv -f "$out.tmp" "$out"
echo "build-image: $out ($(stat -c %s "$out") bytes; layer $layer)"
