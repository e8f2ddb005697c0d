# shellcheck shell=bash
# Writes an OCI image layout tarball of one-layer images, for `ctr images import` (no registry is
# reachable); sourced by e2e/container/build-image.sh and e2e/upstream/accept/build-workload-image.sh.
# Deterministic: the same inputs give the same bytes (sorted tar, zero times and owners).
#
#   oci_layer WORK ROOT          the layer: ROOT as a tar blob under WORK/blobs (sets oci_work,
#                                oci_layer "sha256:<hex>", oci_layer_size)
#   oci_image NAME CONFIG_JSON   an image of that layer whose config's "config" is CONFIG_JSON;
#                                prints its index entry
#   oci_write OUT ENTRY...       the index of the entries, the layout file, all as tarball OUT
case "$(uname -m)" in x86_64) oci_arch=amd64 ;; aarch64) oci_arch=arm64 ;; *) oci_arch=$(uname -m) ;; esac

oci_blob() {  # oci_blob FILE: moves it into blobs/, prints "sha256:<hex> <size>"
  local sum size
  sum=$(sha256sum "$1" | cut -d' ' -f1)
  size=$(stat -c %s "$1")
  mv "$1" "$oci_work/blobs/sha256/$sum"
  echo "sha256:$sum $size"
}

oci_layer() {
  oci_work=$1
  mkdir -p "$oci_work/blobs/sha256"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$2" -cf "$oci_work/layer.tar" .
  read -r oci_layer oci_layer_size < <(oci_blob "$oci_work/layer.tar")
}

oci_image() {
  local name=$1 config=$2 config_digest config_size manifest manifest_size
  printf '{"architecture":"%s","os":"linux","config":%s,"rootfs":{"type":"layers","diff_ids":["%s"]}}' \
    "$oci_arch" "$config" "$oci_layer" >"$oci_work/config.json"
  read -r config_digest config_size < <(oci_blob "$oci_work/config.json")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"%s","size":%s}]}' \
    "$config_digest" "$config_size" "$oci_layer" "$oci_layer_size" >"$oci_work/manifest.json"
  read -r manifest manifest_size < <(oci_blob "$oci_work/manifest.json")
  printf '{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"test"}}' \
    "$manifest" "$manifest_size" "$oci_arch" "$name"
}

oci_write() {
  local out=$1 entries
  shift
  entries=$(IFS=,; echo "$*")
  printf '{"schemaVersion":2,"manifests":[%s]}' "$entries" >"$oci_work/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$oci_work/oci-layout"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$oci_work" -cf "$out.tmp" \
    oci-layout index.json blobs
  mv -f "$out.tmp" "$out"
}
