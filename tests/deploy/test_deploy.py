"""deploy/helm: the Helm chart holds only settings the services really read.

These tests render the chart with Helm (helm_support.py) and load what each workload's container
gets, its ``ONCEFLOW_...`` variables and its ConfigMap's TOML file, through the service's own settings
class (a misspelt or invalid setting raises InvalidConfig); the topics match the code's names, and
the wiring (ports, volumes, probes, the chart's values) is consistent. test_helm.py asserts what each
value changes; test_compose.py checks the compose deploy, which `make deploy-test` runs.
"""

from __future__ import annotations

import importlib.util
import json
import re
import tomllib
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.exposure import INSECURE_ENV, listeners_of, refuse_unauthenticated
from onceflow.core.settings import Settings

from .deploy_checks import check_connector, check_topics, check_wiring, traffic
from .deploy_support import (
    CHART,
    ROOT,
    SAMPLE_DSN,
    SETTING_NAME,
    SETTINGS,
    Deploy,
    assert_setting_exists,
    bootstrap_servers,
    load_service_settings,
    load_yaml,
    lookup,
    served_ports,
    service_of,
    templates,
    values_references,
)
from .helm_support import config_file, kubernetes_env, manifests, pod_spec, render, workloads

#: The workload of each service in the default values' rendering (shard 0 of the participants).
WORKLOADS = {
    "coordinator": "onceflow-coordinator",
    "participant": "onceflow-participant-0",
    "connect-worker": "onceflow-connect-worker",
    "spark-worker": "onceflow-spark-worker",
    "consumer": "onceflow-consumer",
}


@pytest.fixture(scope="module")
def values() -> dict[str, Any]:
    return load_yaml(CHART / "values.yaml")


@pytest.fixture(scope="module")
def chart_docs() -> list[dict[str, Any]]:
    return manifests(render())


@pytest.fixture(scope="module")
def chart(
    values: dict[str, Any], chart_docs: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Settings, dict[str, str], dict[str, Any]]]:
    """Per service: what its container loads (its ConfigMap's file plus its environment), the
    environment (the Secrets hold the values' Kafka properties and :data:`SAMPLE_DSN`) and its workload."""
    directory = tmp_path_factory.mktemp("chart")
    secrets = {"KAFKA_PROPERTIES": json.dumps(values["kafka"]["properties"]), "POSTGRES_DSN": SAMPLE_DSN}
    loaded = {}
    for name, workload_name in WORKLOADS.items():
        workload = workloads(chart_docs)[workload_name]
        env = kubernetes_env(pod_spec(workload)["containers"][0], secrets)
        settings_env = {k: v for k, v in env.items() if k.startswith("ONCEFLOW_")}
        config = config_file(chart_docs, workload, directory)
        loaded[name] = (load_service_settings(name, config, settings_env), env, workload)
    return loaded


@pytest.fixture(scope="module")
def chart_deploy(chart: dict[str, tuple[Settings, dict[str, str], dict[str, Any]]]) -> Deploy:
    return Deploy.load(lambda name: chart[name][0])


# --- compose ----------------------------------------------------------------------------------


# --- connectors and the audit ------------------------------------------------------------------


def test_connectors_and_audit_generator_agree(values: dict[str, Any], chart_deploy: Deploy) -> None:
    connectors = [dict(config, name=name) for name, config in values["connectWorker"]["connectors"].items()]
    readme = (ROOT / "deploy" / "README.md").read_text()
    for config in connectors:
        check_connector({k: str(v) for k, v in config.items()})
        if config["connector.class"] == "access-log-generator":
            assert traffic(config) == traffic(chart_deploy.consumer.audit.generator), "generator and [audit.generator]"
            audit = f"--seed {config['seed']} --count {config['count']}"
            assert audit in readme, f"deploy/README.md does not audit with {audit}"
            assert audit in templates()["NOTES.txt"]


# --- Helm -------------------------------------------------------------------------------------


def test_chart_metadata() -> None:
    chart = load_yaml(CHART / "Chart.yaml")
    with (ROOT / "packages" / "core" / "pyproject.toml").open("rb") as fh:
        version = tomllib.load(fh)["project"]["version"]
    assert chart["apiVersion"] == "v2" and chart["name"] == CHART.name == "onceflow"
    assert re.fullmatch(r"\d+\.\d+\.\d+", chart["version"])
    assert chart["appVersion"] == version


def test_every_values_reference_exists(values: dict[str, Any]) -> None:
    references = set().union(*(values_references(text) for text in templates().values()))
    assert "kafka.bootstrapServers" in references
    for reference in sorted(references):
        lookup(values, reference)


def test_template_actions_are_balanced() -> None:
    for name, text in templates().items():
        assert text.count("{{") == text.count("}}"), name
        actions = re.findall(r"\{\{-?\s*(if|with|range|define|end)\b", text)
        assert actions.count("end") * 2 == len(actions), f"{name}: an if/with/range/define without its end"


def test_every_included_template_is_defined() -> None:
    texts = templates()
    defined = set(re.findall(r'\{\{-? define "([\w.]+)"', texts["_helpers.tpl"]))
    included = set().union(*(re.findall(r'include "([\w.]+)"', text) for text in texts.values()))
    assert included <= defined, f"not defined: {sorted(included - defined)}"


def test_config_maps_hold_the_plain_toml_files() -> None:
    texts = templates()
    for name in SETTINGS:
        configmap = texts[f"{name}-configmap.yaml"]
        assert f'{name}.toml: |-\n    {{{{- .Files.Get "files/{name}.toml" | nindent 4 }}}}' in configmap
        with (CHART / "files" / f"{name}.toml").open("rb") as fh:
            tomllib.load(fh)
    for text in texts.values():
        for file in re.findall(r'\.Files\.Get "([^"]+)"', text):
            assert (CHART / file).is_file(), file


@pytest.mark.parametrize("name", SETTINGS)
def test_chart_config_and_environment_load_through_the_settings_class(
    values: dict[str, Any], chart: dict[str, tuple[Settings, dict[str, str], dict[str, Any]]], name: str
) -> None:
    settings, env, workload = chart[name]  # loading raised InvalidConfig naming a bad key or variable
    for key, value in env.items():
        assert "$(" not in value, f"{key}: $(...) refers to a variable defined later or not at all"
        if key.startswith("ONCEFLOW_"):
            assert service_of(key) == name, f"{name} sets {key}, a setting of {service_of(key)}"
    container = pod_spec(workload)["containers"][0]
    ports = {port["containerPort"] for port in container["ports"]}
    assert ports == served_ports(settings)
    probes = [container[probe] for probe in ("startupProbe", "readinessProbe", "livenessProbe") if probe in container]
    assert {probe["grpc"]["port"] for probe in probes if "grpc" in probe} <= ports
    assert bootstrap_servers(settings) == {values["kafka"]["bootstrapServers"]}


def test_every_setting_name_in_the_chart_is_real() -> None:
    names = set(SETTING_NAME.findall("".join(templates().values()) + (CHART / "values.yaml").read_text()))
    assert len(names) >= 10
    for name in sorted(names):
        assert_setting_exists(name)


def test_helm_targets_reach_the_servers(chart_deploy: Deploy) -> None:
    check_wiring(chart_deploy, "onceflow-coordinator-0.onceflow-coordinator-headless", "onceflow-participant-0")


def test_chart_creates_the_topics_the_services_use(values: dict[str, Any], chart_deploy: Deploy) -> None:
    definitions = values["kafka"]["topics"]["definitions"]
    created = {name: (spec["partitions"], spec.get("config") or {}) for name, spec in definitions.items()}
    check_topics(created, chart_deploy)
    assert chart_deploy.coordinator.transaction_log.replication_factor == values["kafka"]["replicationFactor"]


def test_single_instances_stay_single(values: dict[str, Any], chart_docs: list[dict[str, Any]]) -> None:
    """One driver per job (a second fences the first), one pod per participant shard, and coordinators
    in a StatefulSet, which never runs two pods of one ordinal (test_helm.py: the standby)."""
    docs = workloads(chart_docs)
    assert docs["onceflow-spark-worker"]["spec"]["replicas"] == 1 and "replicas" not in values["sparkWorker"]
    shards = [doc for name, doc in docs.items() if name.startswith("onceflow-participant-")]
    assert [doc["spec"]["replicas"] for doc in shards] == [1] * values["participant"]["shards"] == [1]
    coordinator = docs["onceflow-coordinator"]
    assert coordinator["kind"] == "StatefulSet" and coordinator["spec"]["replicas"] == 1


def test_topic_job_runs_the_script(values: dict[str, Any], chart_docs: list[dict[str, Any]]) -> None:
    """The Job runs the script on the values' topics, each with the values' min.insync.replicas unless
    its own config says otherwise, once the replication factor's brokers are up."""
    (container,) = pod_spec(workloads(chart_docs)["onceflow-topics"])["containers"]
    assert container["command"] == ["python", "/etc/onceflow/topics/create_topics.py"]
    assert any(m["mountPath"] == "/etc/onceflow/topics" for m in container["volumeMounts"])
    env = kubernetes_env(container)
    kafka = values["kafka"]
    assert env["REPLICATION_FACTOR"] == env["MIN_BROKERS"] == str(kafka["replicationFactor"])
    topics = json.loads(env["TOPICS"])
    assert set(topics) == set(kafka["topics"]["definitions"])
    for name, definition in kafka["topics"]["definitions"].items():
        wanted = {"min.insync.replicas": str(kafka["minInsyncReplicas"]), **definition.get("config", {})}
        assert topics[name] == {**definition, "config": wanted}, name


def test_topic_script_creates_the_chart_topics(broker: EmbeddedBroker, values: dict[str, Any]) -> None:
    spec = importlib.util.spec_from_file_location("create_topics", CHART / "files" / "create_topics.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    definitions = values["kafka"]["topics"]["definitions"]
    env = {
        "KAFKA_BOOTSTRAP_SERVERS": broker.bootstrap_servers,
        "KAFKA_PROPERTIES": json.dumps(values["kafka"]["properties"]),
        "REPLICATION_FACTOR": "1",
        "TOPICS": json.dumps(definitions),
    }
    assert script.main(env) == 0
    assert script.main(env) == 0, "a second run must leave the topics as they are"
    metadata = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=30)
    for name, topic in definitions.items():
        assert len(metadata.topics[name].partitions) == topic["partitions"], name
    assert script.main({**env, "TOPICS": "[]"}) == 2


TOKEN_SECRET = "/run/secrets/grpc_token"


@pytest.mark.parametrize("name", SETTINGS)
def test_chart_services_mount_the_grpc_token_their_config_names(
    values: dict[str, Any], chart: dict[str, tuple[Settings, dict[str, str], dict[str, Any]]], name: str
) -> None:
    """Issue 14: the chart's servers require the token and its clients send it, from grpcAuth's Secret."""
    settings: Any
    settings, _, workload = chart[name]
    volumes = {v["name"]: v for v in pod_spec(workload)["volumes"]}
    assert volumes["grpc-token"]["secret"]["secretName"] == values["grpcAuth"]["existingSecret"]
    mounts = {m["name"]: m["mountPath"] for m in pod_spec(workload)["containers"][0]["volumeMounts"]}
    assert mounts["grpc-token"] == TOKEN_SECRET.rsplit("/", 1)[0]
    tokens = []
    if name != "spark-worker":
        assert settings.server.host == "0.0.0.0"
        tokens.append(settings.server.auth.token_file)
    if name in ("spark-worker", "participant"):
        tokens.append(settings.coordinator.tls.token_file)
    if name == "coordinator":
        tokens.append(settings.participant_tls.token_file)
    assert tokens and set(tokens) == {TOKEN_SECRET}
    assert values["grpcAuth"]["existingSecret"] and values["grpcAuth"]["secretKey"]


def test_every_deployed_server_authenticates_without_onceflow_insecure(chart_deploy: Deploy) -> None:
    """Issue 22: a service off loopback refuses to start without authentication (onceflow.core.exposure)
    unless ONCEFLOW_INSECURE=1; the chart passes the check without it, and never sets it
    (tests/deploy/test_compose.py checks the compose deploy)."""
    deploy = chart_deploy
    for settings in (deploy.coordinator, deploy.participant, deploy.connect, deploy.spark, deploy.consumer):
        refuse_unauthenticated(listeners_of(settings), env={})
    files = [*(CHART / "templates").iterdir(), CHART / "values.yaml"]
    assert not [f.name for f in files if INSECURE_ENV in f.read_text()]
