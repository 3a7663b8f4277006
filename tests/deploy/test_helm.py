"""deploy/helm/onceflow, checked by Helm itself: ``helm lint --strict``, ``helm template`` for Kubernetes
1.31, and every rendered manifest decoded strictly into the Kubernetes API types by kubecheck
(tools/kubecheck, on k8s.io/api), so a misspelt field fails. ``make helm kubecheck`` builds both from
the Go module proxy; the chart is rendered and checked, never installed (no cluster runs here).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .deploy_support import CHART
from .helm_support import (
    HELM,
    KUBE_VERSION,
    KUBECHECK,
    REQUIRED,
    kubernetes_env,
    manifests,
    pod_spec,
    render,
    run,
    workloads,
)

ONCEFLOW = Path(sys.executable).parent / "onceflow"


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


# --- least privilege: the ACL Job ------------------------------------------------------------------

ACLS = ("--set", "kafka.acls.apply=true", "--set", "kafka.acls.adminSecret.name=onceflow-kafka-admin")


def test_the_acl_job_applies_each_services_acls_as_the_admin_before_the_services_start(tmp_path: Path) -> None:
    """Off by default; on, a hook after the topics Job runs ``onceflow acls apply`` as the admin (its
    Secret, also the topics Job's login) with the principal map of the values, on the services' own
    files and rendered settings: the plan it computes from them holds each service's names."""
    assert "onceflow-acls" not in workloads(manifests(render()))
    values = ("coordinator.extraEnv[0].name=ONCEFLOW_COORDINATOR__TRANSACTION_LOG__TOPIC",
              "coordinator.extraEnv[0].value=_onceflow_decisions", "kafka.acls.principals.spark=",
              "consumer.kafkaPropertiesSecret.name=results-login")  # fmt: skip
    docs = manifests(render(*ACLS, *(arg for value in values for arg in ("--set", value))))
    jobs = workloads(docs)
    job, topics = jobs["onceflow-acls"], jobs["onceflow-topics"]
    weight = "helm.sh/hook-weight"
    assert int(job["metadata"]["annotations"][weight]) > int(topics["metadata"]["annotations"][weight])
    assert "pre-install" in job["metadata"]["annotations"]["helm.sh/hook"]
    (container,) = pod_spec(job)["containers"]
    argv = container["command"]
    assert argv[:3] == ["onceflow", "acls", "apply"] and "--service-env" in argv
    admin = argv[argv.index("--command-config") + 1]
    for workload in (job, topics):
        volumes = {v["name"]: v for v in pod_spec(workload)["volumes"]}
        assert volumes["kafka-admin"]["secret"]["secretName"] == "onceflow-kafka-admin"
    assert kubernetes_env(pod_spec(topics)["containers"][0])["KAFKA_PROPERTIES_FILE"] == admin
    # each service logs in with its own Secret when given one
    consumer = pod_spec(workloads(docs)["onceflow-consumer"])["containers"][0]
    login = next(v for v in consumer["env"] if v["name"] == "KAFKA_PROPERTIES")
    assert login["valueFrom"]["secretKeyRef"]["name"] == "results-login"
    # the plan of exactly what the Job runs with: its ConfigMap's files and its environment
    config_map = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "onceflow-acls")
    mount = next(m["mountPath"] for m in container["volumeMounts"] if m["name"] == "config")
    for name, text in config_map["data"].items():
        (tmp_path / name).write_text(text)
    plan_argv, rest = ["plan"], iter(argv[3:])
    for arg in rest:
        if arg in ("--bootstrap-servers", "-X", "--command-config"):  # apply's alone: the broker and the login
            next(rest)
        else:
            plan_argv.append(arg.replace(mount, str(tmp_path)))
    result = subprocess.run([str(ONCEFLOW), "acls", *plan_argv], env={**os.environ, **kubernetes_env(container)},
                            capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    acls = {tuple(line.split(" # ")[0].split()) for line in result.stdout.splitlines() if not line.startswith("#")}
    assert ("User:participant", "ALLOW", "WRITE", "TOPIC:LITERAL:ip_count_sink") in acls
    assert ("User:participant", "ALLOW", "WRITE", "TRANSACTIONAL_ID:PREFIXED:onceflow-sink-kafka-") in acls
    # a service's extraEnv reaches the Job too
    assert ("User:coordinator", "ALLOW", "WRITE", "TOPIC:LITERAL:_onceflow_decisions") in acls
    assert ("User:consumer", "ALLOW", "READ", "TOPIC:LITERAL:ip_count_sink") in acls
    assert not [acl for acl in acls if acl[0] == "User:spark"], "a service left out of the map gets no ACLs"
