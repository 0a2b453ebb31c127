#!/usr/bin/env bash
# Smoke test of the Debian package deploy/debian/build.sh made (root; buildah): in a clean
# Debian 12 (a fresh container of BASE, chroot isolation), `apt-get install ./rocetap_*.deb`
# with its dependencies from Debian; then rocetap runs (--version, `analyze` of a sample
# byte for byte), the man pages and completions are in place, the binary is root:rocetap
# 0754 with its capabilities so that a member of group `rocetap` captures without root and
# a non-member cannot run it, the agent starts from /etc/rocetap/agent.yaml, and the unit
# passes `systemd-analyze verify`; `apt-get remove` removes it and keeps the conffile,
# `apt-get purge` removes that too. Exit 1 and the failed check, else 0.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/target/dist}
export BUILDAH_ISOLATION=${BUILDAH_ISOLATION:-chroot}
deb=$(ls "$OUT"/rocetap_*.deb)
if [ -z "${BASE:-}" ]; then
  BASE=localhost/rocetap-base:bookworm
  buildah inspect --type image "$BASE" >/dev/null 2>&1 || BASE=docker.io/library/debian:bookworm-slim
fi

fail() { echo "deb smoke: FAILED: $*" >&2; exit 1; }
ok() { echo "deb smoke: ok: $*"; }

ctr=$(buildah from "$BASE")
trap 'buildah umount "$ctr" >/dev/null 2>&1 || true; buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
mnt=$(buildah mount "$ctr")
cp "$deb" samples/loss-upstream.pcap samples/loss-upstream.analyze.txt "$mnt/tmp/"
# The capabilities the binary carries must be in the bounding set, or exec fails (EPERM).
# Outputs go to files in the container's /tmp, read through the mount: buildah run's relay
# of stdout came back empty now and then on a loaded machine (buildah 1.28, chroot).
run() { buildah run --cap-add CAP_NET_RAW,CAP_IPC_LOCK "$ctr" -- sh -c "$1"; }

# A slim base excludes man pages and docs from every install (dpkg path-exclude, as
# debian:bookworm-slim and build.sh's mmdebstrap base do); a node installs them.
run "rm -f /etc/dpkg/dpkg.cfg.d/docker /etc/dpkg/dpkg.cfg.d/99mmdebstrap" || fail "dpkg.cfg.d"
run "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /tmp/$(basename "$deb") >/tmp/install.log 2>&1" \
  || { cat "$mnt/tmp/install.log"; fail "apt-get install ./$(basename "$deb")"; }
ok "apt-get install ./$(basename "$deb") ($(grep -c '^Setting up' "$mnt/tmp/install.log") packages set up)"

run "rocetap --version > /tmp/version.out" || fail "rocetap --version"
v=$(cat "$mnt/tmp/version.out")
[ "$v" = "rocetap $(dpkg-deb -f "$deb" Version | sed 's/-[^-]*$//')" ] || fail "--version printed '$v'"
run "cd /tmp && rocetap analyze loss-upstream.pcap > analyze.out; [ \$? -le 1 ] && cmp analyze.out loss-upstream.analyze.txt" \
  || fail "analyze differs from samples/loss-upstream.analyze.txt"
ok "$v; analyze samples/loss-upstream.pcap byte for byte"

for f in usr/share/man/man1/rocetap.1.gz usr/share/man/man1/rocetap-agent.1.gz usr/share/man/man1/rocetap-capture.1.gz \
  usr/share/bash-completion/completions/rocetap usr/share/zsh/vendor-completions/_rocetap \
  usr/share/fish/vendor_completions.d/rocetap.fish usr/lib/systemd/system/rocetap-agent.service \
  etc/rocetap/agent.yaml usr/share/doc/rocetap/copyright usr/share/doc/rocetap/rocetap.cdx.json; do
  [ -s "$mnt/$f" ] || fail "no /$f"
done
zcat "$mnt/usr/share/man/man1/rocetap-analyze.1.gz" | grep -q '^\.TH' || fail "rocetap-analyze.1 is not a man page"
run "bash -n /usr/share/bash-completion/completions/rocetap" || fail "the bash completion does not parse"
grep -q -- 'complete -c rocetap' "$mnt/usr/share/fish/vendor_completions.d/rocetap.fish" || fail "fish completion"
grep -q '^#compdef rocetap' "$mnt/usr/share/zsh/vendor-completions/_rocetap" || fail "zsh completion"
ok "man pages (12), completions for bash, zsh and fish, unit, agent.yaml, SBOM"

# Numeric: the group is the container's, unknown to this host's /etc/group.
gid=$(awk -F: '$1=="rocetap"{print $3}' "$mnt/etc/group")
[ -n "$gid" ] || fail "no group rocetap"
perm=$(stat -c '%u:%g %a' "$mnt/usr/bin/rocetap")
[ "$perm" = "0:$gid 754" ] || fail "/usr/bin/rocetap is $perm, not root:rocetap($gid) 754"
caps=$(getcap "$mnt/usr/bin/rocetap" | sed 's/.* //')
[ "$caps" = "cap_net_raw,cap_ipc_lock=eip" ] || fail "capabilities are '$caps'"
ok "/usr/bin/rocetap $perm $caps"

# A member of group rocetap captures on loopback without root; a non-member cannot run it.
run "useradd -M -G rocetap alice && useradd -M bob" || fail "useradd"
# Through sh, whose exec as alice or bob drops every capability setpriv kept (root's exec
# of a file it may not execute would pass): only the file's own capabilities remain.
run "cd /tmp && setpriv --reuid=alice --regid=alice --init-groups -- sh -c \
  'grep -q \"^CapEff:.0*$\" /proc/self/status && rocetap capture -i lo --duration 1 -w /tmp/alice.pcap -q'" \
  || fail "alice (group rocetap, no capability of her own) cannot capture on lo"
[ "$(head -c 4 "$mnt/tmp/alice.pcap" | od -An -tx1 | tr -d ' ')" = d4c3b2a1 ] \
  || [ "$(head -c 4 "$mnt/tmp/alice.pcap" | od -An -tx1 | tr -d ' ')" = 0a0d0d0a ] || fail "alice's capture is no pcap"
if run "setpriv --reuid=bob --regid=bob --init-groups -- sh -c 'rocetap --version'" 2>/dev/null; then
  fail "bob (not in group rocetap) ran rocetap"
fi
ok "alice (group rocetap) captured on lo without root; bob (no group) cannot run rocetap"

# The agent starts from the packaged config (port 0: any free one) and stops on time.
run "rocetap agent --config /etc/rocetap/agent.yaml --listen 127.0.0.1:0 -i lo --netcheck-interval 0 --duration 2 >/tmp/agent.log 2>&1" \
  || { cat "$mnt/tmp/agent.log"; fail "rocetap agent --config /etc/rocetap/agent.yaml"; }
ok "agent ran 2 s from /etc/rocetap/agent.yaml"
if command -v systemd-analyze >/dev/null; then
  systemd-analyze verify --root="$mnt" --man=no --recursive-errors=no \
    /usr/lib/systemd/system/rocetap-agent.service \
    || fail "systemd-analyze verify rocetap-agent.service"
  ok "systemd-analyze verify rocetap-agent.service"
fi

run "DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq rocetap >/dev/null" || fail "apt-get remove"
[ ! -e "$mnt/usr/bin/rocetap" ] || fail "/usr/bin/rocetap left after remove"
[ -e "$mnt/etc/rocetap/agent.yaml" ] || fail "remove took the conffile"
run "DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq rocetap >/dev/null" || fail "apt-get purge"
[ ! -e "$mnt/etc/rocetap" ] || fail "/etc/rocetap left after purge"
run "! dpkg -s rocetap >/dev/null 2>&1" || fail "dpkg still knows rocetap"
ok "apt-get remove (conffile kept), apt-get purge (all gone)"
echo "deb smoke: all checks passed"
