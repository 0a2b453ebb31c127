#!/usr/bin/env bash
# Builds rocetap's Debian package with cargo-deb and prints its size and build time:
# first the man pages and completions (from the binary itself: `rocetap man`,
# `rocetap completions`) and the SBOM, under target/release/deb/, then `cargo deb`.
#
#   deploy/debian/build.sh              # builds the release binary if needed
#   deploy/debian/build.sh --no-build   # packages target/release/rocetap as it is
#                                       # (deploy/container/build.sh's, linked against
#                                       # the +rdma libpcap: same soname and ABI)
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$(date +%s)
OUT=${OUT:-$PWD/target/dist}
mkdir -p "$OUT"
command -v cargo-deb >/dev/null || { echo "build.sh: cargo-deb is not installed (cargo install cargo-deb)" >&2; exit 2; }

tdir=$(cargo metadata --format-version 1 --no-deps --locked | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
if [ "${1:-}" != --no-build ]; then
  cargo build --release --locked --bin rocetap
fi
bin=$tdir/release/rocetap
[ -x "$bin" ] || { echo "build.sh: no $bin" >&2; exit 2; }
gen=$tdir/release/deb
rm -rf "$gen"
mkdir -p "$gen/man" "$gen/completions"
"$bin" man --out-dir "$gen/man" >/dev/null
gzip -9n "$gen"/man/*.1
"$bin" completions bash > "$gen/completions/rocetap.bash"
"$bin" completions zsh > "$gen/completions/_rocetap"
"$bin" completions fish > "$gen/completions/rocetap.fish"
python3 deploy/sbom.py crates --out "$gen/rocetap.cdx.json"
cp "$gen/rocetap.cdx.json" "$OUT/rocetap-deb.cdx.json"

# --dbgsym: the line tables (profile.release debug = 1) go to rocetap-dbgsym_*.ddeb.
rm -f "$OUT"/rocetap_*.deb "$OUT"/rocetap-dbgsym_*.ddeb
cargo deb --no-build --locked --dbgsym --output "$OUT"
deb=$(ls "$OUT"/rocetap_*.deb)
echo "package $deb: $(( $(stat -c %s "$deb") / 1000 )) kB, built in $(( $(date +%s) - start )) s; sbom $OUT/rocetap-deb.cdx.json"
