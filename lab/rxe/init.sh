#!/bin/bash
# /init of an rxe lab VM (the whole root file system is the initramfs, in RAM).
# Parameters come from the kernel command line: lab.name=A lab.ip=198.18.0.1/24 lab.mtu=1500
# It brings up the virtio NIC, creates the Soft-RoCE device rxe0 on it, then serves the
# control port (virtio-serial "ctl"): one request line "ID BASE64(command)" in, one reply
# line "RES ID RC BASE64(stdout+stderr)" out, one command at a time.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /dev/shm
LAB_name=X LAB_ip=198.18.0.9/24 LAB_mtu=1500
for a in $(cat /proc/cmdline); do
  case "$a" in
    lab.name=*) LAB_name=${a#*=} ;;
    lab.ip=*) LAB_ip=${a#*=} ;;
    lab.mtu=*) LAB_mtu=${a#*=} ;;
  esac
done
hostname "rxe-$LAB_name"
log() { echo "[init $LAB_name] $*" > /dev/ttyS0; }
# crc32_generic first: without it `rdma link add ... type rxe` fails with ENOENT. One
# modprobe for them all (each program started costs about 0.1 s under TCG); module by
# module, to say which, only when one fails.
MODS="virtio_pci virtio_net virtio_console crc32_generic rdma_rxe ib_uverbs ib_cm rdma_cm rdma_ucm ib_umad
      sch_netem sch_prio sch_ingress ifb act_mirred cls_matchall cls_u32"
# shellcheck disable=SC2086
if ! modprobe -a $MODS; then
  for m in $MODS; do
    modprobe "$m" || log "modprobe $m failed"
  done
fi
ip link set lo up
ETH=$(for n in /sys/class/net/*; do b=$(basename "$n"); [ -e "$n/device" ] && echo "$b"; done | head -1)
ip link set "$ETH" mtu "$LAB_mtu" up
ip addr add "$LAB_ip" dev "$ETH"
# no offloads: the tap sees each packet as rxe sent it
ethtool -K "$ETH" tso off gso off gro off >/dev/null 2>&1 || true
rdma link add rxe0 type rxe netdev "$ETH" || log "rdma link add failed"
echo "$ETH" > /run/eth
log "up: eth=$ETH ip=$LAB_ip mtu=$LAB_mtu $(uname -r)"

CTL=
for p in /sys/class/virtio-ports/*; do
  [ "$(cat "$p/name" 2>/dev/null)" = ctl ] && CTL=/dev/$(basename "$p")
done
[ -n "$CTL" ] || { log "no ctl port"; sleep 5; echo o > /proc/sysrq-trigger; }
log "agent on $CTL"
exec 3<>"$CTL"
while true; do
  if ! IFS=' ' read -r id b64 <&3; then sleep 0.2; continue; fi
  [ -n "$id" ] || continue
  cmd=$(printf '%s' "$b64" | base64 -d 2>/dev/null)
  # a subshell, not a new bash: one program fewer to start per command
  ( cd /root && eval "$cmd" ) > /tmp/.agent.out 2>&1 < /dev/null
  rc=$?
  printf 'RES %s %s %s\n' "$id" "$rc" "$(base64 -w0 /tmp/.agent.out)" >&3
done
