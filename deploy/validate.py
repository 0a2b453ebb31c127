#!/usr/bin/env python3
"""Validates Kubernetes manifests and Grafana dashboards offline, strictly: every document
of every file given.

    python3 deploy/validate.py deploy/kubernetes/daemonset.yaml deploy/kubernetes/podmonitor.yaml
    python3 deploy/validate.py deploy/grafana/rocetap-fleet.json

- Built-in kinds (Namespace, ServiceAccount, DaemonSet, ...) against the Kubernetes OpenAPI
  schemas that PyPI's kubernetes-validate ships, in its strict mode (unknown fields are
  errors, as `kubectl apply --validate=strict` makes them).
- PodMonitor and PrometheusRule (monitoring.coreos.com/v1, CRDs: kubernetes-validate has
  no schema for them) against the JSON schema of PyPI's cloudcoil-models-prometheus-operator, models generated
  from prometheus-operator's CRDs, made strict the same way (additionalProperties: false on
  every object that lists its properties).
- A file ending in .json is a Grafana dashboard, checked structurally (`dashboard_errors`):
  the keys Grafana needs, panels of known types on the 24-column grid without overlap, a
  datasource variable every panel and query uses, queries with unique refIds, every
  rocetap_* name in deploy/metrics.txt and every rocetap:* name recorded by
  deploy/prometheus/rocetap-rules.yml, and a heatmap of the node-pair loss matrix.
- Anything else is an error: no schema must never pass as valid.

Prints one line per document ("ok KIND/NAME" or "error FILE KIND/NAME: PATH: MESSAGE") and
exits 0 when all are valid, 1 when one is not, 2 when a file cannot be read or parsed.
Needs: pip install kubernetes-validate jsonschema cloudcoil-models-prometheus-operator
(the versions .ci/run pins). No network.
"""

import sys

import jsonschema
import yaml
from kubernetes_validate import utils as kv

# The oldest release the manifests are meant for (the one whose schema lacks the most) and
# the newest the installed kubernetes-validate knows: a field must exist in both.
OLDEST_K8S = "1.27"


def strict(node):
    """additionalProperties: false wherever an object lists its properties."""
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for value in node.values():
            strict(value)
    elif isinstance(node, list):
        for value in node:
            strict(value)
    return node


def crd_validators():
    """(apiVersion, kind) -> validator for the custom resources these manifests use."""
    from cloudcoil.models.prometheus_operator import v1 as monitoring_v1

    out = {}
    for kind in (monitoring_v1.PodMonitor, monitoring_v1.PrometheusRule):
        schema = kind.model_json_schema(by_alias=True, mode="validation")
        validator = jsonschema.Draft202012Validator(strict(schema))
        out[("monitoring.coreos.com/v1", kind.__name__)] = validator
    return out


def crd_errors(validator, doc):
    """(path, message) of every error, the most specific one of each branch."""
    out = []
    for err in validator.iter_errors(doc):
        best = jsonschema.exceptions.best_match([err])
        out.append((".".join(str(p) for p in best.absolute_path), best.message))
    return sorted(out)


def check(doc, validators):
    """Returns the (path, message) errors of one document."""
    if not isinstance(doc, dict) or "apiVersion" not in doc or "kind" not in doc:
        return [("", "not a Kubernetes object (apiVersion and kind are required)")]
    custom = validators.get((doc["apiVersion"], doc["kind"]))
    if custom is not None:
        return crd_errors(custom, doc)
    for version in (OLDEST_K8S, kv.latest_version()):
        try:
            kv.validate(doc, version, strict=True)
        except kv.ValidationError as e:
            where = ".".join(str(p) for p in e.path)
            return [(where, "%s (Kubernetes %s)" % (e.message, e.version))]
        except kv.SchemaNotFoundError as e:
            return [("", e.message)]
    return []


PANEL_TYPES = {"heatmap", "table", "bargauge", "timeseries", "stat", "text", "gauge"}


def names_in(expr, sep):
    """The rocetap{sep}... names an expression uses."""
    import re

    return set(re.findall(r"(?<![A-Za-z0-9_:])rocetap%s[A-Za-z0-9_:]+" % sep, expr))


def deploy_names():
    """(exported metric names, recorded rule names) of this deploy/ directory."""
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "metrics.txt")) as f:
        metrics = {line.strip() for line in f if line.strip()}
    with open(os.path.join(here, "prometheus", "rocetap-rules.yml")) as f:
        rules = yaml.safe_load(f)
    recorded = {
        r["record"] for g in rules.get("groups", []) for r in g.get("rules", []) if "record" in r
    }
    return metrics, recorded


def dashboard_errors(d):
    """(path, message) of every structural error of a Grafana dashboard."""
    out = []
    if not isinstance(d, dict):
        return [("", "not a JSON object")]
    for key, kind in (("title", str), ("uid", str), ("schemaVersion", int), ("panels", list)):
        if not isinstance(d.get(key), kind):
            out.append((key, "missing or not a %s" % kind.__name__))
    if out:
        return out
    uid = d["uid"]
    if not (0 < len(uid) <= 40 and all(c.isalnum() or c in "-_" for c in uid)):
        out.append(("uid", "1 to 40 letters, digits, - or _"))
    if d["schemaVersion"] < 30:
        out.append(("schemaVersion", "older than Grafana 8 (30)"))
    variables = {
        v.get("name") for v in d.get("templating", {}).get("list", []) if v.get("type") == "datasource"
    }
    if not variables:
        out.append(("templating.list", "no datasource variable"))
    metrics, recorded = deploy_names()
    ids, boxes, heatmap = set(), [], False

    def check_ds(where, ds):
        uid = ds.get("uid", "") if isinstance(ds, dict) else ""
        if not (uid.startswith("${") and uid[2:-1] in variables):
            out.append((where, "datasource is not one of the dashboard's variables %s" % sorted(variables)))

    for i, p in enumerate(d["panels"]):
        at = "panels.%d" % i
        if not isinstance(p, dict):
            out.append((at, "not an object"))
            continue
        if not isinstance(p.get("id"), int) or p["id"] in ids:
            out.append((at + ".id", "missing, not an integer or not unique"))
        ids.add(p.get("id"))
        if p.get("type") not in PANEL_TYPES:
            out.append((at + ".type", "%r is not one of %s" % (p.get("type"), sorted(PANEL_TYPES))))
        if not isinstance(p.get("title"), str) or not p["title"]:
            out.append((at + ".title", "missing"))
        g = p.get("gridPos")
        if not (isinstance(g, dict) and all(isinstance(g.get(k), int) for k in "xywh")):
            out.append((at + ".gridPos", "x, y, w, h must be integers"))
        elif g["x"] < 0 or g["y"] < 0 or g["w"] < 1 or g["h"] < 1 or g["x"] + g["w"] > 24:
            out.append((at + ".gridPos", "outside the 24-column grid"))
        else:
            for j, b in boxes:
                if g["x"] < b["x"] + b["w"] and b["x"] < g["x"] + g["w"] and g["y"] < b["y"] + b["h"] and b["y"] < g["y"] + g["h"]:
                    out.append((at + ".gridPos", "overlaps panels.%d" % j))
            boxes.append((i, g))
        if p.get("type") == "text":
            continue
        check_ds(at + ".datasource", p.get("datasource"))
        targets = p.get("targets")
        if not isinstance(targets, list) or not targets:
            out.append((at + ".targets", "no query"))
            continue
        refs = set()
        for k, t in enumerate(targets):
            tat = "%s.targets.%d" % (at, k)
            if not isinstance(t, dict) or not isinstance(t.get("expr"), str) or not t["expr"].strip():
                out.append((tat + ".expr", "missing"))
                continue
            if t.get("refId") in refs or not t.get("refId"):
                out.append((tat + ".refId", "missing or not unique"))
            refs.add(t.get("refId"))
            check_ds(tat + ".datasource", t.get("datasource"))
            for n in sorted(names_in(t["expr"], "_") - metrics):
                out.append((tat + ".expr", "%s is not in deploy/metrics.txt" % n))
            for n in sorted(names_in(t["expr"], ":") - recorded):
                out.append((tat + ".expr", "%s is not recorded by rocetap-rules.yml" % n))
            if p.get("type") == "heatmap" and "rocetap:pair_loss_ratio:rate5m" in t["expr"]:
                heatmap = True
    if not heatmap:
        out.append(("panels", "no heatmap of rocetap:pair_loss_ratio:rate5m (the loss matrix)"))
    return out


def main_dashboard(path):
    """Checks one dashboard file; returns whether it is valid (exits 2 when unreadable)."""
    import json

    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        print("validate.py: %s: %s" % (path, " ".join(str(e).split())), file=sys.stderr)
        sys.exit(2)
    errors = dashboard_errors(d)
    for where, message in errors:
        print("error %s dashboard/%s: %s: %s" % (path, d.get("uid", "?") if isinstance(d, dict) else "?", where or "(top)", message))
    if not errors:
        print("ok dashboard/%s" % d["uid"])
    return not errors


def name_of(doc):
    if not isinstance(doc, dict):
        return "?"
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    return "%s/%s" % (doc.get("kind", "?"), meta.get("name", "?"))


def load(paths):
    """(path, documents) of every file, or exits 2 naming the one that cannot be read."""
    out = []
    for path in paths:
        try:
            with open(path) as f:
                out.append((path, [d for d in yaml.safe_load_all(f) if d is not None]))
        except (OSError, yaml.YAMLError) as e:
            print("validate.py: %s: %s" % (path, " ".join(str(e).split())), file=sys.stderr)
            sys.exit(2)
    return out


def main(paths):
    if not paths:
        print("usage: validate.py MANIFEST.yaml...", file=sys.stderr)
        return 2
    failed = False
    dashboards = [p for p in paths if p.endswith(".json")]
    for path in dashboards:
        failed |= not main_dashboard(path)
    paths = [p for p in paths if not p.endswith(".json")]
    if not paths:
        return 1 if failed else 0
    files = load(paths)
    validators = crd_validators()
    for path, docs in files:
        if not docs:
            print("error %s: no Kubernetes object in the file" % path)
            failed = True
        for doc in docs:
            errors = check(doc, validators)
            for where, message in errors:
                print("error %s %s: %s: %s" % (path, name_of(doc), where or "(top)", message))
            if errors:
                failed = True
            else:
                print("ok %s" % name_of(doc))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
