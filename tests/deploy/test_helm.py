"""deploy/helm/onceflow, checked by Helm itself: ``helm lint --strict``, ``helm template`` for Kubernetes
1.31, and every rendered manifest decoded strictly into the Kubernetes API types by kubecheck
(tools/kubecheck, on k8s.io/api), so a misspelt field fails. ``make helm kubecheck`` builds both from
the Go module proxy; the chart is rendered and checked, never installed (no cluster runs here).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from .deploy_support import CHART, ROOT

HELM = ROOT / ".cache" / "helm" / "v3.22.0" / "helm"
KUBECHECK = ROOT / ".cache" / "kubecheck" / "kubecheck"
KUBE_VERSION = "1.31.0"
#: What every install must set: the Secret with the PostgreSQL DSN (the chart refers to it).
REQUIRED = ("--set", "postgresql.existingSecret=onceflow-postgres")
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "Job"}


def run(tool: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert tool.is_file(), f"{tool} is missing: run 'make helm kubecheck' (they build from the Go module proxy)"
    return subprocess.run([str(tool), *args], input=stdin, capture_output=True, text=True, timeout=120, check=False)


def render(*args: str) -> str:
    result = run(HELM, "template", "onceflow", str(CHART), "--kube-version", KUBE_VERSION, *REQUIRED, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def manifests(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def workloads(docs: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in docs if doc["kind"] in WORKLOAD_KINDS}


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


@pytest.fixture(scope="module")
def default_manifests() -> str:
    return render()


def test_helm_lint_strict_passes() -> None:
    result = run(HELM, "lint", "--strict", "--kube-version", KUBE_VERSION, str(CHART), *REQUIRED)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in result.stdout


def test_every_rendered_manifest_decodes_strictly_into_the_kubernetes_types(default_manifests: str) -> None:
    result = run(KUBECHECK, "-", stdin=default_manifests)
    assert result.returncode == 0, result.stdout + result.stderr
    kinds = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("ok ")]
    assert len(kinds) == len(manifests(default_manifests)) >= 15
    assert {"Deployment", "StatefulSet", "Service", "ConfigMap", "Job"} <= set(kinds)


def test_kubecheck_refuses_a_misspelt_field_and_an_unknown_kind(default_manifests: str) -> None:
    misspelt = default_manifests.replace("  replicas: 1\n", "  replica: 1\n", 1)
    result = run(KUBECHECK, "-", stdin=misspelt)
    assert result.returncode == 1 and 'unknown field "replica"' in result.stdout, result.stdout
    unknown = "apiVersion: apps/v1\nkind: Deploymnet\nmetadata:\n  name: x\n"
    result = run(KUBECHECK, "-", stdin=unknown)
    assert result.returncode == 1 and "no such kind" in result.stdout


def test_every_workload_mounts_the_grpc_token_and_probes_its_servers(default_manifests: str) -> None:
    for name, workload in workloads(manifests(default_manifests)).items():
        spec = pod_spec(workload)
        secrets = {v["secret"]["secretName"] for v in spec.get("volumes", []) if "secret" in v}
        if workload["kind"] == "Job":
            continue
        assert "onceflow-grpc-token" in secrets, name
        for container in spec["containers"]:
            mounts = {m["mountPath"] for m in container.get("volumeMounts", [])}
            assert "/run/secrets" in mounts, f"{name}/{container['name']}"
            assert "readinessProbe" in container, f"{name}/{container['name']} has no readiness probe"
            assert spec["securityContext"]["runAsNonRoot"] is True, name


def test_replicas_and_resources_follow_the_values() -> None:
    docs = workloads(
        manifests(
            render(
                "--set",
                "consumer.replicas=3",
                "--set",
                "connectWorker.replicas=2",
                "--set",
                "consumer.resources.limits.memory=1Gi",
            )
        )
    )
    consumer = docs["onceflow-consumer"]
    assert consumer["spec"]["replicas"] == 3
    assert docs["onceflow-connect-worker"]["spec"]["replicas"] == 2
    assert pod_spec(consumer)["containers"][0]["resources"] == {"limits": {"memory": "1Gi"}}
    assert docs["onceflow-coordinator"]["spec"]["strategy"] == {"type": "Recreate"}
