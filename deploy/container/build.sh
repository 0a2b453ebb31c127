#!/usr/bin/env bash
# Builds rocetap's image without a daemon and prints its size and build time: buildah
# (Debian's package) as root with chroot isolation (BUILDAH_ISOLATION=chroot: no OCI
# runtime, no user namespaces) and its default storage, overlay (the kernel's overlayfs;
# on a file system without it, /etc/containers/storage.conf's driver = "vfs" works too).
#
#   deploy/container/build.sh                 # -> localhost/rocetap:VERSION, and IMAGE below
#   IMAGE=registry.example/rocetap:0.1.0 deploy/container/build.sh && buildah push "$IMAGE"
#
# Steps: (1) the base: BASE if given or pullable, else Debian 12 made by mmdebstrap from
# Debian's archive (no image registry needed); (2) the Containerfile's `libpcap` stage:
# Debian's libpcap rebuilt with the RDMA sniffer, its .debs copied to OUT; (3) rocetap
# built on the host, linked against that libpcap (LIBPCAP_LIBDIR), stripped; its
# CycloneDX SBOM; (4) the runtime stage; (5) the image's SBOM (its Debian packages and
# rocetap's crates) and an OCI archive in OUT.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD

version=$(sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -1)
IMAGE=${IMAGE:-ghcr.io/rocetap/rocetap:$version}
OUT=${OUT:-$repo/target/dist}
export BUILDAH_ISOLATION=${BUILDAH_ISOLATION:-chroot}
mkdir -p "$OUT"
start=$(date +%s)
step() { echo "== $1 ($(( $(date +%s) - start )) s)" >&2; }

for tool in buildah cargo objcopy python3; do
  command -v "$tool" >/dev/null || { echo "build.sh: $tool is not installed" >&2; exit 2; }
done

# (1) The base image.
BASE=${BASE:-}
if [ -z "$BASE" ]; then
  if timeout 60 buildah pull -q docker.io/library/debian:bookworm-slim >/dev/null 2>&1; then
    BASE=docker.io/library/debian:bookworm-slim
  else
    BASE=localhost/rocetap-base:bookworm
    if ! buildah inspect --type image "$BASE" >/dev/null 2>&1; then
      step "base: no image registry reachable; mmdebstrap Debian 12 into $BASE"
      command -v mmdebstrap >/dev/null || { echo "build.sh: mmdebstrap is not installed" >&2; exit 2; }
      tar=$(mktemp --suffix=.tar)
      # What debian:bookworm-slim is: apt and the essential packages, without docs,
      # man pages and locales; with the updates and security suites.
      mmdebstrap --mode=root --variant=apt --quiet \
        --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-include=/usr/share/doc/*/copyright' \
        --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
        bookworm "$tar" \
        'deb http://deb.debian.org/debian bookworm main' \
        'deb http://deb.debian.org/debian bookworm-updates main' \
        'deb http://deb.debian.org/debian-security bookworm-security main'
      ctr=$(buildah from scratch)
      buildah add -q "$ctr" "$tar" / >/dev/null
      buildah config --cmd /bin/bash "$ctr"
      buildah commit -q "$ctr" "$BASE" >/dev/null
      buildah rm "$ctr" >/dev/null
      rm -f "$tar"
    fi
  fi
fi
step "base $BASE"

# (2) libpcap with the RDMA sniffer; its .debs out of the stage.
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/context/sbom"
buildah bud -q --layers --target libpcap --build-arg BASE="$BASE" \
  -t localhost/rocetap-libpcap:"$version" -f deploy/container/Containerfile "$ctx" >/dev/null
ctr=$(buildah from localhost/rocetap-libpcap:"$version")
mnt=$(buildah mount "$ctr")
rm -f "$OUT"/libpcap0.8*_*.deb
cp "$mnt"/out/*.deb "$OUT"/
buildah umount "$ctr" >/dev/null
buildah rm "$ctr" >/dev/null
# A fixed place: the path is part of cargo's fingerprint (LIBPCAP_LIBDIR), so a second run
# rebuilds nothing.
pcap=$OUT/libpcap-rdma
rm -rf "$pcap"
for d in "$OUT"/libpcap0.8_*.deb "$OUT"/libpcap0.8-dev_*.deb; do dpkg-deb -x "$d" "$pcap"; done
libdir=$(dirname "$(find "$pcap" -name libpcap.so | head -1)")
pcap_ver=$(dpkg-deb -f "$OUT"/libpcap0.8_*.deb Version | sed 's/-.*//')
step "libpcap $pcap_ver with the RDMA sniffer: $(cd "$OUT" && ls libpcap0.8*_*.deb | tr '\n' ' ')"

# (3) rocetap, linked against it (LIBPCAP_VER: its build script cannot load that libpcap
# on a host without libibverbs to ask its version).
LIBPCAP_LIBDIR=$libdir LIBPCAP_VER=$pcap_ver cargo build --release --locked --bin rocetap
bin=$(cargo metadata --format-version 1 --no-deps --locked | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/rocetap
objcopy --strip-debug "$bin" "$ctx/context/rocetap"
python3 deploy/sbom.py crates --out "$ctx/context/sbom/rocetap.cdx.json"
step "rocetap $version built and stripped ($(stat -c %s "$ctx/context/rocetap") bytes)"

# (4) The image.
buildah bud -q --layers --build-arg BASE="$BASE" --build-arg VERSION="$version" \
  --build-arg REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
  --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  -t localhost/rocetap:"$version" -t "$IMAGE" -f deploy/container/Containerfile "$ctx" >/dev/null
step "image $IMAGE"

# (5) Its SBOM (the Debian packages in the image, then rocetap's crates), and an archive.
ctr=$(buildah from "$IMAGE")
mnt=$(buildah mount "$ctr")
python3 deploy/sbom.py image --dpkg-status "$mnt/var/lib/dpkg/status" \
  --crates "$ctx/context/sbom/rocetap.cdx.json" --name "$IMAGE" --out "$OUT/rocetap-image.cdx.json"
buildah umount "$ctr" >/dev/null
buildah rm "$ctr" >/dev/null
rm -f "$OUT/rocetap-image.oci.tar"
buildah push -q "$IMAGE" oci-archive:"$OUT/rocetap-image.oci.tar:$IMAGE" >/dev/null
elapsed=$(( $(date +%s) - start ))
size=$(buildah images --format '{{.Size}}' "$IMAGE" | head -1)
echo "image $IMAGE: $size unpacked, $(( $(stat -c %s "$OUT/rocetap-image.oci.tar") / 1000000 )) MB compressed (OCI archive $OUT/rocetap-image.oci.tar), built in ${elapsed} s"
echo "sbom $OUT/rocetap-image.cdx.json; libpcap .debs in $OUT"
