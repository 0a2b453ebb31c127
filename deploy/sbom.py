#!/usr/bin/env python3
"""CycloneDX 1.5 SBOMs (JSON) for rocetap's package and image.

  sbom.py crates --out rocetap.cdx.json
      every crate compiled into the `rocetap` binary (cargo tree: normal dependencies,
      default features, this host's target), with version, licence, purl, repository and
      the sha256 of its .crate from Cargo.lock;
  sbom.py image --dpkg-status ROOT/var/lib/dpkg/status --crates rocetap.cdx.json \
                --name IMAGE --out image.cdx.json
      the Debian packages installed in an image (purl pkg:deb/debian/...) and the crates.

A small script rather than cargo-cyclonedx: the same facts (cargo's own resolution and
the lock file's checksums), without a tool to compile in CI. Nothing is guessed: a crate
cargo tree prints that the lock file does not hold is an error.
"""

import argparse
import json
import subprocess
import sys
import tomllib
import uuid
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def die(msg):
    print(f"sbom.py: {msg}", file=sys.stderr)
    sys.exit(2)


def bom(component, components, dependencies=None):
    out = {
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "serialNumber": f"urn:uuid:{uuid.uuid4()}",
        "version": 1,
        "metadata": {
            "timestamp": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "tools": {"components": [{"type": "application", "name": "rocetap deploy/sbom.py"}]},
            "component": component,
        },
        "components": components,
    }
    if dependencies is not None:
        out["dependencies"] = dependencies
    return out


def licenses(expr):
    # Old manifests write `MIT/Apache-2.0`, which SPDX spells `MIT OR Apache-2.0`.
    expr = " OR ".join(part.strip() for part in expr.split("/"))
    return [{"expression": expr}] if expr else []


def crates():
    lock = tomllib.loads((REPO / "Cargo.lock").read_text())
    sums = {(p["name"], p["version"]): p.get("checksum") for p in lock["package"]}
    tree = subprocess.run(
        ["cargo", "tree", "-p", "rocetap", "-e", "normal", "--prefix", "none", "--locked",
         "--format", "{p}|{l}|{r}"],
        cwd=REPO, check=True, capture_output=True, text=True).stdout
    root, comps = None, {}
    for line in tree.splitlines():
        # a crate printed before ends with ` (*)`
        line = line.removesuffix(" (*)")
        p, lic, url = (line.split("|") + ["", ""])[:3]
        words = p.split()
        name, version = words[0], words[1].lstrip("v")
        local = len(words) > 2 and words[2].startswith("(/")
        if (name, version) not in sums:
            die(f"{name} {version}: printed by cargo tree, not in Cargo.lock")
        c = {
            "type": "application" if name == "rocetap" else "library",
            "bom-ref": f"pkg:cargo/{name}@{version}",
            "name": name,
            "version": version,
            "licenses": licenses(lic.strip()),
            "purl": f"pkg:cargo/{name}@{version}",
        }
        if sums[(name, version)]:
            c["hashes"] = [{"alg": "SHA-256", "content": sums[(name, version)]}]
        if url.strip():
            c["externalReferences"] = [{"type": "vcs", "url": url.strip()}]
        if local:
            c["description"] = "part of the rocetap workspace"
        if name == "rocetap":
            root = c
        else:
            comps[c["bom-ref"]] = c
    if root is None:
        die("cargo tree printed no rocetap")
    return bom(root, sorted(comps.values(), key=lambda c: c["bom-ref"]))


def dpkg(status):
    comps = []
    text = Path(status).read_text()
    for para in text.split("\n\n"):
        fields, key = {}, None
        for line in para.splitlines():
            if line[:1] in (" ", "\t") and key:
                continue
            key, _, val = line.partition(":")
            fields[key] = val.strip()
        if "installed" not in fields.get("Status", "").split():
            continue
        name, version, arch = fields["Package"], fields["Version"], fields.get("Architecture", "all")
        src = fields.get("Source", name).split()[0]
        comps.append({
            "type": "library",
            "bom-ref": f"pkg:deb/debian/{name}@{version}?arch={arch}",
            "name": name,
            "version": version,
            "purl": f"pkg:deb/debian/{name}@{version}?arch={arch}&distro=debian-12"
                    + (f"&upstream={src}" if src != name else ""),
            "supplier": {"name": fields.get("Maintainer", "")},
        })
    if not comps:
        die(f"{status}: no installed package")
    return comps


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("crates")
    c.add_argument("--out", required=True)
    i = sub.add_parser("image")
    i.add_argument("--dpkg-status", required=True)
    i.add_argument("--crates", required=True)
    i.add_argument("--name", required=True)
    i.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.cmd == "crates":
        out = crates()
    else:
        inner = json.loads(Path(a.crates).read_text())
        rocetap = inner["metadata"]["component"]
        debs = dpkg(a.dpkg_status)
        image = {"type": "container", "bom-ref": a.name, "name": a.name.rsplit(":", 1)[0],
                 "version": a.name.rsplit(":", 1)[-1]}
        comps = debs + [rocetap] + inner["components"]
        deps = [{"ref": a.name, "dependsOn": [d["bom-ref"] for d in debs] + [rocetap["bom-ref"]]},
                {"ref": rocetap["bom-ref"], "dependsOn": [x["bom-ref"] for x in inner["components"]]}]
        out = bom(image, comps, deps)
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"{a.out}: {len(out['components'])} components", file=sys.stderr)


main()
