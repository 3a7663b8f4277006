"""The Helm chart as Helm renders it, for tests/deploy: ``helm template`` of deploy/helm/onceflow (Kubernetes
1.31), its manifests, and what one container of a workload sees (its environment as the kubelet expands
it, the TOML file of its ConfigMap). ``make helm kubecheck`` builds helm and kubecheck from the Go
module proxy into .cache; the chart is rendered and checked, never installed (no cluster runs here).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from .deploy_support import CHART, ROOT, load_service_settings

HELM = ROOT / ".cache" / "helm" / "v3.22.0" / "helm"
KUBECHECK = ROOT / ".cache" / "kubecheck" / "kubecheck"
KUBE_VERSION = "1.31.0"
#: What every install must set: the Secret with the PostgreSQL DSN (the chart refers to it).
REQUIRED = ("--set", "postgresql.existingSecret=onceflow-postgres")
#: The release name the tests render: resources are called onceflow-<component>.
RELEASE = "onceflow"
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "Job"}


def run(tool: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert tool.is_file(), f"{tool} is missing: run 'make helm kubecheck' (they build from the Go module proxy)"
    return subprocess.run([str(tool), *args], input=stdin, capture_output=True, text=True, timeout=120, check=False)


def template(*args: str) -> subprocess.CompletedProcess[str]:
    """``helm template`` of the chart with ``args`` (``--set``, ``-f``) after the required values."""
    return run(HELM, "template", RELEASE, str(CHART), "--kube-version", KUBE_VERSION, *REQUIRED, *args)


def render(*args: str) -> str:
    result = template(*args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def manifests(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def workloads(docs: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in docs if doc["kind"] in WORKLOAD_KINDS}


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def kubernetes_env(container: dict[str, Any], secrets: Mapping[str, str] | None = None) -> dict[str, str]:
    """A container's environment as the kubelet sets it: ``$(NAME)`` of a variable defined before is
    expanded; a variable from a Secret or a field holds ``secrets[NAME]``, else ``{}`` (a JSON object)."""
    env: dict[str, str] = {}
    for variable in container.get("env", []):
        value = variable["value"] if "value" in variable else (secrets or {}).get(variable["name"], "{}")
        env[variable["name"]] = re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), value)
    return env


def config_file(docs: Sequence[dict[str, Any]], workload: dict[str, Any], directory: Path) -> Path:
    """The TOML file the workload's first container reads (``--config``), written from its ConfigMap."""
    spec = pod_spec(workload)
    container = spec["containers"][0]
    argv = [*container.get("command", []), *container.get("args", [])]
    path = Path(argv[argv.index("--config") + 1])
    mount = next(m for m in container["volumeMounts"] if path.is_relative_to(m["mountPath"]))
    volume = next(v for v in spec["volumes"] if v["name"] == mount["name"])
    name = volume["configMap"]["name"]
    config_map = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == name)
    written = directory / f"{workload['metadata']['name']}-{path.name}"
    written.write_text(config_map["data"][path.name])
    return written


def loaded(docs: Sequence[dict[str, Any]], name: str, service: str, directory: Path) -> tuple[Any, dict[str, Any]]:
    """What workload ``name``'s container loads, through its service's settings class, and its container."""
    workload = workloads(docs)[name]
    container = pod_spec(workload)["containers"][0]
    env = {k: v for k, v in kubernetes_env(container).items() if k.startswith("ONCEFLOW_")}
    return load_service_settings(service, config_file(docs, workload, directory), env), container


def secret_refs(container: dict[str, Any]) -> dict[str, str]:
    """Each variable that comes from a Secret: its Secret's name."""
    return {
        v["name"]: v["valueFrom"]["secretKeyRef"]["name"]
        for v in container["env"]
        if "secretKeyRef" in v.get("valueFrom", {})
    }


def hook(workload: dict[str, Any]) -> tuple[set[str], int]:
    """A hook's phases (``helm.sh/hook``) and its weight: Helm runs a phase's hooks by ascending weight."""
    annotations = workload["metadata"]["annotations"]
    return set(annotations["helm.sh/hook"].split(",")), int(annotations["helm.sh/hook-weight"])
