#!/usr/bin/env bash
# Builds everything the rxe lab needs, idempotently, under $RXE_LAB (default /var/tmp/rxe-lab):
#   qemu/      qemu-system-x86_64 from Debian's .debs, unpacked (not installed, see README.md)
#   fw/        firmware directory for qemu -L (links to the seabios / qemu-system-data files)
#   kernel/    Debian's linux-image-amd64 unpacked (vmlinuz + modules)
#   rootfs/    debootstrap bookworm minbase + rdma-core, perftest, tcpdump, iproute2, ...
#   rocetap-initrd.img  the trimmed rootfs + the needed modules + init.sh as /init (cpio)
# Each step is skipped when its result is already there; the initramfs is rebuilt when
# init.sh, the module list or the package list change. The Debian mirror is read from this
# machine's apt sources. Needs root (debootstrap, apt-get). Safe to run again at any time.
set -euo pipefail
L=${RXE_LAB:-/var/tmp/rxe-lab}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$L/debs"
export DEBIAN_FRONTEND=noninteractive
log() { echo "[build $(date +%T)] $*"; }

# The guest's packages and modules (the initramfs signature covers both lists).
PKGS=rdma-core,ibverbs-providers,ibverbs-utils,perftest,rdmacm-utils,tcpdump,iproute2,kmod,procps,iputils-ping,ethtool
MODS="crc32_generic rdma_rxe ib_core ib_uverbs rdma_cm rdma_ucm iw_cm ib_cm udp_tunnel ip6_udp_tunnel ib_umad
      virtio_net virtio_pci virtio_console virtio_rng sch_netem sch_ingress sch_prio ifb act_mirred cls_matchall cls_u32"
# the switch VM S of the three-VM lab (switch.py): a Linux bridge
MODS="$MODS bridge stp llc"
# the kernel's mirror exporters (lab/rxe/mirror.py): erspan/gretap (ip_gre), ip6erspan (ip6_gre),
# vxlan, geneve; and tcpreplay to replay a sample into them
MODS="$MODS ip_gre ip6_gre vxlan geneve veth"
PKGS=$PKGS,tcpreplay

# ---- host packages -------------------------------------------------------------------
need=()
for p in debootstrap cpio gzip kmod seabios ipxe-qemu python3; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
# run-time libraries of qemu-system-x86 (installed as ordinary libraries; qemu itself is unpacked)
QLIBS="libaio1 libbpf1 libcapstone4 libfdt1 libfuse3-3 libglib2.0-0 libgmp10 libgnutls30 libibverbs1
libjpeg62-turbo libnuma1 libpixman-1-0 libpmem1 libpng16-16 librdmacm1 libsasl2-2 libseccomp2 libslirp0
liburing2 libvdeplug2 libzstd1 zlib1g"
for p in $QLIBS; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  log "apt-get install ${need[*]}"
  timeout 600 apt-get update -qq
  timeout 1800 apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

# ---- qemu ------------------------------------------------------------------------------
# On this image qemu-system-x86 cannot be apt-installed (a backports qemu-utils Breaks
# qemu-system-common 7.2), so the bookworm .debs are downloaded and unpacked under $L/qemu.
if [ ! -x "$L/qemu/usr/bin/qemu-system-x86_64" ] && ! command -v qemu-system-x86_64 >/dev/null; then
  log "fetching qemu .debs"
  ( cd "$L/debs" && timeout 600 apt-get download qemu-system-x86 qemu-system-data qemu-system-common )
  mkdir -p "$L/qemu"
  # qemu-system-common carries the accel-tcg module (vm.py points QEMU_MODULE_DIR at it)
  for d in "$L"/debs/qemu-system-{x86,data,common}_*.deb; do dpkg -x "$d" "$L/qemu"; done
fi
mkdir -p "$L/fw"
for f in "$L"/qemu/usr/share/qemu/* /usr/share/qemu/* /usr/share/seabios/* /usr/lib/ipxe/qemu/*; do
  if [ -e "$f" ] && [ ! -e "$L/fw/$(basename "$f")" ]; then ln -s "$f" "$L/fw/"; fi
done

# ---- kernel ------------------------------------------------------------------------------
if [ ! -f "$L/kernel/.done" ]; then
  log "fetching Debian's kernel"
  ( cd "$L/debs" && timeout 600 apt-get download linux-image-amd64 )
  KPKG=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  ( cd "$L/debs" && timeout 900 apt-get download "$KPKG" )
  rm -rf "$L/kernel"; mkdir -p "$L/kernel"
  dpkg -x "$L"/debs/"$KPKG"_*.deb "$L/kernel"
  touch "$L/kernel/.done"
fi
KVER=$(ls "$L/kernel/lib/modules" | head -1)
[ -f "$L/vmlinuz" ] && cmp -s "$L/kernel/boot/vmlinuz-$KVER" "$L/vmlinuz" || cp -f "$L/kernel/boot/vmlinuz-$KVER" "$L/vmlinuz"

# ---- root file system ------------------------------------------------------------------------
mirror() {
  # the first "deb" URI whose suites contain exactly "bookworm" (deb822 or one-line format)
  local u
  u=$(awk 'BEGIN{RS=""} /Types:[^\n]*deb/ && /Suites:[^\n]*(^|[ \t])bookworm([ \t]|$)/ {
        if (match($0,/URIs:[ \t]*[^ \t\n]+/)) { s=substr($0,RSTART,RLENGTH); sub(/URIs:[ \t]*/,"",s); print s; exit } }' \
        /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  if [ -z "$u" ]; then
    u=$(awk '$1=="deb" && $3=="bookworm"{print $2; exit}' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)
  fi
  echo "$u"
}
if [ ! -f "$L/rootfs/.done" ]; then
  M=$(mirror); [ -n "$M" ] || { echo "no bookworm mirror in the apt sources" >&2; exit 1; }
  log "debootstrap bookworm (mirror from the apt sources)"
  rm -rf "$L/rootfs"
  timeout 2400 debootstrap --variant=minbase --include="$PKGS" bookworm "$L/rootfs" "$M"
  touch "$L/rootfs/.done"
fi
# packages added to PKGS after the rootfs was made: installed into it (apt in a chroot)
late=$(for p in ${PKGS//,/ }; do chroot "$L/rootfs" dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
if [ -n "$late" ]; then
  log "installing into the rootfs: $late"
  cp -f /etc/resolv.conf "$L/rootfs/etc/resolv.conf" 2>/dev/null || true
  # shellcheck disable=SC2086
  timeout 900 chroot "$L/rootfs" sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends $late"
fi

# ---- initramfs: trimmed rootfs + modules + /init ----------------------------------------------
IMG="$L/rocetap-initrd.img"
STAMP="$L/rocetap-initrd.stamp"
SIG=$( { cat "$here/init.sh"; echo "$PKGS"; echo $MODS; echo "$KVER"; echo newc; } | sha256sum | cut -c1-16)
if [ ! -f "$IMG" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$SIG" ]; then
  log "packing the initramfs"
  S=$(mktemp -d "$L/stage.XXXXXX")
  trap 'rm -rf "$S"' EXIT
  cp -a "$L/rootfs/." "$S/"
  rm -rf "$S"/usr/share/{doc,man,info,locale,lintian,bash-completion} "$S"/var/cache/apt/* "$S"/var/lib/apt/lists/* \
         "$S"/usr/share/zoneinfo "$S"/usr/lib/x86_64-linux-gnu/gconv "$S/.done" 2>/dev/null || true
  KM="$L/kernel/lib/modules/$KVER"
  depmod -b "$L/kernel" "$KVER"
  # shellcheck disable=SC2086
  list=$(for m in $MODS; do modprobe -d "$L/kernel" -S "$KVER" --show-depends "$m" 2>/dev/null; done \
         | awk '$1=="insmod"{print $2}' | sort -u)
  mkdir -p "$S/lib/modules/$KVER"
  for f in $list; do
    rel=${f#"$KM/"}
    mkdir -p "$S/lib/modules/$KVER/$(dirname "$rel")"
    cp "$f" "$S/lib/modules/$KVER/$rel"
  done
  cp "$KM"/modules.{order,builtin,builtin.modinfo} "$S/lib/modules/$KVER/" 2>/dev/null || true
  depmod -b "$S" "$KVER"
  echo "$list" | sed "s#$KM/##" > "$L/rocetap-modules.list"
  install -m 0755 "$here/init.sh" "$S/init"
  # Not compressed: the kernel unpacks the 114 MB of cpio in about 2 s of a TCG guest's boot,
  # and took 3.5-4.7 s to gunzip the 43 MB it was compressed to.
  ( cd "$S" && find . -print | cpio -o -H newc --quiet ) > "$IMG.tmp"
  mv "$IMG.tmp" "$IMG"
  echo "$SIG" > "$STAMP"
  rm -rf "$S"; trap - EXIT
fi
QEMU=$( [ -x "$L/qemu/usr/bin/qemu-system-x86_64" ] && echo "$L/qemu/usr/bin/qemu-system-x86_64" || command -v qemu-system-x86_64)
log "ready: $QEMU, kernel $KVER, $(wc -l < "$L/rocetap-modules.list") modules, $(du -h "$IMG" | cut -f1) initramfs"
