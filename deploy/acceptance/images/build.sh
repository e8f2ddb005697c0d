#!/usr/bin/env bash
# Builds the acceptance workload image of one vendor from images/Dockerfile, with that vendor's
# build arguments from images/vendors.tsv (the build context is deploy/acceptance).
#
#   images/build.sh VENDOR [TAG]
#
# TAG defaults to xpu-acceptance:VENDOR. BASE=<image> in the environment replaces the table's base
# image (the release that matches the nodes' driver); BUILDER=podman or buildah replaces docker.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
vendor=${1:?usage: images/build.sh VENDOR [TAG] (vendors: $(grep -v '^#' "$HERE/vendors.tsv" | cut -f1 | tr '\n' ' '))}
row=$(awk -F'\t' -v v="$vendor" '$1 == v' "$HERE/vendors.tsv")
[ -n "$row" ] || { echo "build.sh: no vendor $vendor in $HERE/vendors.tsv" >&2; exit 2; }
base=${BASE:-$(cut -f2 <<<"$row")}
setup=$(cut -f3 <<<"$row")
"${BUILDER:-docker}" build -f "$HERE/Dockerfile" --build-arg "BASE=$base" --build-arg "SETUP=$setup" \
  -t "${2:-xpu-acceptance:$vendor}" "$HERE/.."
