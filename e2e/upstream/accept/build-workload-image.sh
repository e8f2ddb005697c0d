#!/usr/bin/env bash
# Builds the acceptance workload's test image (docker.io/xpu-dra/accept-workload:test) as an OCI
# image layout tarball, for `ctr images import` (no registry is reachable). The image is a shell
# of a root file system: the merged-/usr links (bin, lib, lib64, sbin -> usr/...), an empty /usr,
# a minimal /etc (passwd, group, hosts, nsswitch.conf), /tmp and /root, and a config whose PATH
# starts with VENV/bin and whose PYTHONPATH is /opt/xpu-acceptance. Python, torch and the workload
# are not in it: the pod mounts the node's /usr, the virtual environment VENV (a venv of the
# node's /usr/bin/python3, scripts/acceptance-venv, about 7 GB) at its own path, and
# deploy/acceptance at /opt/xpu-acceptance, all read-only (e2e/upstream/accept/pod-patch.json).
# Deterministic: the same inputs give the same bytes (e2e/container/oci-layout.sh).
#
#   e2e/upstream/accept/build-workload-image.sh OUT.tar VENV
set -euo pipefail
out=${1:?usage: build-workload-image.sh OUT.tar VENV}
venv=${2:?usage: build-workload-image.sh OUT.tar VENV}
[[ $venv == /* ]] || { echo "build-workload-image: VENV must be an absolute path: $venv" >&2; exit 2; }
name=docker.io/xpu-dra/accept-workload:test
work=$(mktemp -d /tmp/xpu-accept-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs
mkdir -p "$root"/{usr,dev,proc,sys,etc,tmp,run,root,opt/xpu-acceptance}
chmod 1777 "$root/tmp"
chmod 0700 "$root/root"
for l in bin lib lib64 sbin; do ln -s "usr/$l" "$root/$l"; done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
printf '127.0.0.1 localhost\n::1 localhost\n' >"$root/etc/hosts"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
. "$(dirname "$0")/../../container/oci-layout.sh"
oci_layer "$work" "$root"
config=$(printf '{"Entrypoint":["python3","-m","xpu_acceptance"],"WorkingDir":"/tmp","Env":["PATH=%s/bin:/usr/local/bin:/usr/bin:/bin","PYTHONPATH=/opt/xpu-acceptance","PYTHONDONTWRITEBYTECODE=1","PYTHONUNBUFFERED=1","HOME=/root"]}' "$venv")
oci_write "$out" "$(oci_image "$name" "$config")"
echo "build-workload-image: $out ($(stat -c %s "$out") bytes; $name, layer $oci_layer)"
