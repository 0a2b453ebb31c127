#!/usr/bin/env python3
"""Validates Kubernetes manifests offline, strictly: every document of every file given.

    python3 deploy/validate.py deploy/kubernetes/daemonset.yaml deploy/kubernetes/podmonitor.yaml

- Built-in kinds (Namespace, ServiceAccount, DaemonSet, ...) against the Kubernetes OpenAPI
  schemas that PyPI's kubernetes-validate ships, in its strict mode (unknown fields are
  errors, as `kubectl apply --validate=strict` makes them).
- PodMonitor and PrometheusRule (monitoring.coreos.com/v1, CRDs: kubernetes-validate has
  no schema for them) against the JSON schema of PyPI's cloudcoil-models-prometheus-operator, models generated
  from prometheus-operator's CRDs, made strict the same way (additionalProperties: false on
  every object that lists its properties).
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
    files = load(paths)
    validators = crd_validators()
    failed = False
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
