#!/usr/bin/env bash
# Smoke test of the image build.sh made (root; buildah with chroot isolation, so no
# container engine): rocetap --version, `analyze` of a sample (its committed output byte
# for byte), `interfaces`, run as uid 65532 too; its libpcap links libibverbs and holds
# the RDMA sniffer, the mlx5 provider is there, the entrypoint needs no shell, the OCI
# labels are set, and the SBOM is valid CycloneDX. Exit 1 and the failed check, else 0.
set -euo pipefail
cd "$(dirname "$0")/../.."
version=$(sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -1)
IMAGE=${IMAGE:-ghcr.io/rocetap/rocetap:$version}
OUT=${OUT:-$PWD/target/dist}
export BUILDAH_ISOLATION=${BUILDAH_ISOLATION:-chroot}

fail() { echo "image smoke: FAILED: $*" >&2; exit 1; }
ok() { echo "image smoke: ok: $*"; }

ctr=$(buildah from "$IMAGE")
mnt=$(buildah mount "$ctr")
trap 'buildah umount "$ctr" >/dev/null 2>&1 || true; buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
run() { buildah run --isolation chroot -v "$PWD/samples:/samples:ro" "$@"; }
# runo [OPTIONS] -- CMD...: CMD in the container with its stdout and stderr in the
# container's /tmp/smoke.out and .err, read back through the mount ($mnt/tmp): buildah
# run's own relay of stdout came back empty now and then on a loaded machine (buildah
# 1.28, chroot isolation).
runo() {
  local opts=()
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  rm -f "$mnt/tmp/smoke.out" "$mnt/tmp/smoke.err"
  run "${opts[@]}" "$ctr" -- /bin/sh -c 'exec "$@" >/tmp/smoke.out 2>/tmp/smoke.err' sh "$@"
}

runo -- /usr/bin/rocetap --version || fail "--version"
v=$(cat "$mnt/tmp/smoke.out")
[ "$v" = "rocetap $version" ] || fail "--version printed '$v'"
ok "$v"

for fmt in text json; do
  golden=samples/loss-upstream.analyze.txt
  [ $fmt = json ] && golden=samples/loss-upstream.analyze.json
  runo --workingdir /samples -- /usr/bin/rocetap analyze --format $fmt loss-upstream.pcap \
    || { cat "$mnt/tmp/smoke.err"; fail "analyze --format $fmt failed"; }
  cmp -s "$mnt/tmp/smoke.out" "$golden" || fail "analyze --format $fmt differs from $golden"
done
ok "analyze samples/loss-upstream.pcap: its committed text and JSON, byte for byte"

runo --user 65532:65532 --workingdir /samples -- /usr/bin/rocetap analyze loss-upstream.pcap \
  || fail "analyze as uid 65532 failed"
cmp -s "$mnt/tmp/smoke.out" samples/loss-upstream.analyze.txt || fail "analyze as uid 65532 differs"
ok "analyze as uid 65532 (no root)"

# As the DaemonSet runs it: uid 0 with only its four capabilities, dumps under /var/lib/rocetap.
# (buildah 1.28 applies --cap-drop all after --cap-add: drop its defaults one by one.)
only4=()
for c in CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP NET_BIND_SERVICE SYS_CHROOT SETFCAP; do
  only4+=(--cap-drop "CAP_$c")
done
for c in NET_RAW IPC_LOCK SYS_ADMIN SYS_PTRACE; do only4+=(--cap-add "CAP_$c"); done
run "${only4[@]}" "$ctr" -- /bin/grep -q '^CapEff:.0000000000286000$' /proc/self/status \
  || fail "buildah run did not give exactly the four capabilities"
runo "${only4[@]}" -- /usr/bin/rocetap agent -i lo --listen 127.0.0.1:0 --netcheck-interval 0 \
  --dump-dir /var/lib/rocetap/dumps --duration 2 \
  || { cat "$mnt/tmp/smoke.err"; fail "the agent with the DaemonSet's capabilities"; }
grep -q 'privileges capabilities=' "$mnt/tmp/smoke.err" || fail "the agent logged no privileges line"
ok "agent as the DaemonSet runs it: $(grep -o 'privileges capabilities=[^ ]*' "$mnt/tmp/smoke.err" | head -1)"

runo -- /usr/bin/rocetap interfaces || fail "interfaces failed"
grep -q . "$mnt/tmp/smoke.out" || fail "interfaces printed nothing"
ok "interfaces: $(wc -l < "$mnt/tmp/smoke.out") lines"

# The dynamic loader resolves every library of rocetap and of its libpcap in the image.
runo -- /lib64/ld-linux-x86-64.so.2 --list /usr/bin/rocetap || fail "ld.so --list"
libs=$(cat "$mnt/tmp/smoke.out")
echo "$libs" | grep -q 'not found' && fail "unresolved libraries: $libs"
echo "$libs" | grep -Eq 'libpcap.so.0.8 => (/usr)?/lib/x86_64-linux-gnu/libpcap.so.0.8' || fail "no libpcap: $libs"
echo "$libs" | grep -q 'libibverbs.so.1 => ' || fail "rocetap's libpcap does not load libibverbs: $libs"
so=$(readlink -f "$mnt/usr/lib/x86_64-linux-gnu/libpcap.so.0.8")
objdump -p "$so" | grep -q 'NEEDED *libibverbs.so.1' || fail "$so does not link libibverbs"
grep -q 'RDMA sniffer' "$so" || fail "$so has no RDMA sniffer"
dpkg --root="$mnt" -s libpcap0.8 | grep -q '^Version: .*+rdma' || fail "libpcap0.8 is not the +rdma rebuild"
ls "$mnt"/usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav*.so >/dev/null 2>&1 || fail "no mlx5 provider"
[ -e "$mnt/etc/libibverbs.d/mlx5.driver" ] || fail "no /etc/libibverbs.d/mlx5.driver"
ok "libpcap $(dpkg --root="$mnt" -s libpcap0.8 | sed -n 's/^Version: //p') links libibverbs and has the RDMA sniffer; mlx5 provider present"

ep=$(buildah inspect --type image --format '{{.OCIv1.Config.Entrypoint}}' "$IMAGE")
[ "$ep" = "[/usr/bin/rocetap]" ] || fail "entrypoint is $ep, not the exec form [/usr/bin/rocetap]"
for l in title description version revision created licenses source; do
  val=$(buildah inspect --type image --format "{{index .OCIv1.Config.Labels \"org.opencontainers.image.$l\"}}" "$IMAGE")
  [ -n "$val" ] || fail "no label org.opencontainers.image.$l"
done
ok "entrypoint $ep (exec form, no shell), OCI labels"

python3 - "$OUT/rocetap-image.cdx.json" "$mnt/usr/share/doc/rocetap/rocetap.cdx.json" <<'PY' || fail "SBOM"
import json, sys
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator
v = JsonStrictValidator(SchemaVersion.V1_5)
for f in sys.argv[1:]:
    text = open(f).read()
    err = v.validate_str(text)
    if err:
        sys.exit(f"{f}: {err}")
    names = {c["name"] for c in json.loads(text)["components"]}
    need = {"libpcap0.8", "libibverbs1", "ibverbs-providers", "pcap", "dissectors"} if "image" in f else {"pcap", "dissectors"}
    if need - names:
        sys.exit(f"{f}: lacks {need - names}")
    print(f"image smoke: ok: {f}: valid CycloneDX 1.5, {len(names)} components")
PY
echo "image smoke: all checks passed"
