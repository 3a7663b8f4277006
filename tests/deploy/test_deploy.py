"""deploy/: the compose file and the Helm chart hold only settings the services really read.

Docker and helm cannot run here, so these tests read the files: every ``ONCEFLOW_...`` variable and
every mounted TOML file is loaded through the service's own settings class (a misspelt or invalid
setting raises InvalidConfig), the topics match the code's names, and the wiring (build contexts,
ports, volumes, probes, dependencies, the chart's values) is consistent.
"""

from __future__ import annotations

import importlib.util
import json
import re
import tomllib
from collections.abc import Mapping
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.exposure import INSECURE_ENV, listeners_of, refuse_unauthenticated
from onceflow.core.settings import Settings
from onceflow.runtime.config.files import load_connector_file

from .deploy_checks import TopicSpec, check_connector, check_topics, check_wiring, traffic
from .deploy_support import (
    CHART,
    COMPOSE_DIR,
    COMPOSE_FILE,
    FULLNAME,
    HELPERS,
    ROOT,
    SETTING_NAME,
    SETTINGS,
    Deploy,
    assert_setting_exists,
    bootstrap_servers,
    compose_variables,
    container_env,
    env_example,
    host_path,
    interpolate,
    load_compose,
    load_service_settings,
    load_yaml,
    lookup,
    metrics_port,
    served_ports,
    service_of,
    templates,
    values_references,
)

WORKLOADS = {
    "coordinator": "coordinator-deployment.yaml",
    "participant": "participant-statefulset.yaml",
    "connect-worker": "connect-worker-deployment.yaml",
    "spark-worker": "spark-worker-statefulset.yaml",
    "consumer": "consumer-deployment.yaml",
}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose()


@pytest.fixture(scope="module")
def values() -> dict[str, Any]:
    return load_yaml(CHART / "values.yaml")


@pytest.fixture(scope="module")
def compose_deploy(compose: dict[str, Any]) -> Deploy:
    return Deploy.load(lambda name: compose_settings(compose, name))


@pytest.fixture(scope="module")
def chart_deploy(values: dict[str, Any]) -> Deploy:
    return Deploy.load(lambda name: chart_settings(values, name)[0])


def compose_env(service: dict[str, Any]) -> dict[str, str]:
    variables = env_example()
    return {key: interpolate(value, variables) for key, value in (service.get("environment") or {}).items()}


def compose_settings(compose: dict[str, Any], name: str) -> Settings:
    """What the service loads: the file its --config names (through its mounts) plus its environment."""
    service = compose["services"][name]
    command = service["command"]
    assert command[0] == "--config", f"{name}: command must be --config FILE"
    env = {k: v for k, v in compose_env(service).items() if k.startswith("ONCEFLOW_")}
    return load_service_settings(name, host_path(service, command[1]), env)


def chart_settings(values: Mapping[str, Any], name: str) -> tuple[Settings, dict[str, str], str]:
    """What the workload's container loads (files/<name>.toml plus its environment), the environment
    and the workload template."""
    text = templates()[WORKLOADS[name]]
    config = set(re.findall(r"/etc/onceflow/config/([\w.-]+\.toml)", text))
    assert len(config) == 1 and "--config" in text, f"{name}: expected one --config /etc/onceflow/config/FILE"
    env = container_env(text, values)
    settings_env = {k: v for k, v in env.items() if k.startswith("ONCEFLOW_")}
    return load_service_settings(name, CHART / "files" / config.pop(), settings_env), env, text


# --- compose ----------------------------------------------------------------------------------


def test_compose_runs_kafka_postgres_topic_init_and_every_service(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"kafka", "postgres", "topic-init", *SETTINGS}


@pytest.mark.parametrize("name", SETTINGS)
def test_every_service_is_built_from_its_dockerfile(compose: dict[str, Any], name: str) -> None:
    build = compose["services"][name]["build"]
    context = (COMPOSE_DIR / build["context"]).resolve()
    assert context == ROOT
    assert (context / build["dockerfile"]).resolve() == ROOT / "services" / name / "Dockerfile"
    assert (ROOT / "services" / name / "Dockerfile").is_file()


@pytest.mark.parametrize("name", SETTINGS)
def test_compose_config_and_environment_load_through_the_settings_class(compose: dict[str, Any], name: str) -> None:
    for key in compose_env(compose["services"][name]):
        assert key.startswith("ONCEFLOW_") or key == "PGPASSWORD", f"{name}: {key} is not a setting"
        if key.startswith("ONCEFLOW_"):
            assert service_of(key) == name, f"{name} sets {key}, a setting of {service_of(key)}"
    compose_settings(compose, name)  # raises InvalidConfig naming a bad file key or variable


def test_every_setting_name_in_the_compose_deploy_is_real() -> None:
    names = set(SETTING_NAME.findall(COMPOSE_FILE.read_text() + (COMPOSE_DIR / ".env.example").read_text()))
    assert len(names) >= 5
    for name in sorted(names):
        assert_setting_exists(name)


def test_compose_variables_are_documented_with_the_same_defaults() -> None:
    example = env_example()
    for name, default in compose_variables().items():
        assert name in example, f"${{{name}}} is not in .env.example"
        assert default is None or default == example[name], f"{name}: default {default!r} != {example[name]!r}"
    assert set(example) <= set(compose_variables()), "variables of .env.example that compose ignores"


def test_compose_creates_the_topics_the_services_use(compose: dict[str, Any], compose_deploy: Deploy) -> None:
    created: dict[str, TopicSpec] = {}
    script = COMPOSE_DIR / "topics" / "create-topics.sh"
    for line in script.read_text().splitlines():
        if line.startswith("create "):
            _, name, partitions, *configs = line.split()
            spec = dict(config.split("=", 1) for config in configs)
            created[name] = (int(interpolate(partitions.strip('"'), env_example())), spec)
    check_topics(created, compose_deploy)
    init = compose["services"]["topic-init"]
    assert host_path(init, init["entrypoint"][-1]) == script.resolve()


def test_kafka_is_one_kraft_node_where_transactions_work(compose: dict[str, Any]) -> None:
    kafka = compose["services"]["kafka"]
    env = compose_env(kafka)
    assert interpolate(kafka["image"], env_example()).startswith("apache/kafka:")
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == "1"
    assert env["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"] == "1"
    assert env["KAFKA_ADVERTISED_LISTENERS"] == "PLAINTEXT://kafka:9092"
    for name in SETTINGS:
        assert bootstrap_servers(compose_settings(compose, name)) == {"kafka:9092"}, name


def test_compose_services_reach_each_other(compose_deploy: Deploy) -> None:
    check_wiring(compose_deploy, "")


def test_postgres_allows_prepared_transactions(compose: dict[str, Any]) -> None:
    command = " ".join(compose["services"]["postgres"]["command"])
    match = re.search(r"max_prepared_transactions=(\d+)", command)
    assert match is not None and int(match.group(1)) > 0


def test_staging_is_one_volume_shared_at_the_staging_root(compose: dict[str, Any], compose_deploy: Deploy) -> None:
    root = compose_deploy.spark.staging_root
    assert compose_deploy.coordinator.staging_root == root
    for name in ("coordinator", "participant", "spark-worker"):
        assert f"staging:{root}" in compose["services"][name]["volumes"], name
    assert "staging" in compose["volumes"]


def test_only_results_api_and_metrics_are_published_on_loopback(
    compose: dict[str, Any], compose_deploy: Deploy
) -> None:
    allowed = {name: {metrics_port(compose_settings(compose, name))} for name in SETTINGS}
    allowed["consumer"].add(compose_deploy.consumer.server.port)
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            host, _, container = interpolate(port, env_example()).rpartition(":")
            assert host.startswith("127.0.0.1:"), f"{name}: {port} is not bound to 127.0.0.1"
            assert int(container) in allowed.get(name, set()), f"{name} publishes {container}"


def test_services_have_healthchecks_and_start_in_order(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        for dependency, spec in (service.get("depends_on") or {}).items():
            if spec["condition"] == "service_healthy":
                assert "healthcheck" in services[dependency], f"{name} waits for {dependency}'s health"
            else:
                assert spec["condition"] == "service_completed_successfully" and dependency == "topic-init"
    for name in SETTINGS:
        check = " ".join(services[name]["healthcheck"]["test"])
        assert any(f"127.0.0.1:{port}" in check for port in served_ports(compose_settings(compose, name))), name
        ancestors, todo = set(), [name]
        while todo:
            todo += [d for d in services[todo.pop()].get("depends_on", {}) if d not in ancestors]
            ancestors |= set(todo)
        assert "topic-init" in ancestors, f"{name} may start before the topics exist"
    assert set(services["participant"]["depends_on"]) >= {"postgres", "coordinator"}
    assert set(services["spark-worker"]["depends_on"]) >= {"coordinator", "participant"}


# --- connectors and the audit ------------------------------------------------------------------


def test_connectors_and_audit_generator_agree(
    compose: dict[str, Any], compose_deploy: Deploy, values: dict[str, Any], chart_deploy: Deploy
) -> None:
    service = compose["services"]["connect-worker"]
    compose_connectors = [load_connector_file(host_path(service, p))[1] for p in compose_deploy.connect.connectors]
    assert compose_connectors, "the compose connect worker runs no connector"
    chart_connectors = [dict(config, name=name) for name, config in values["connectWorker"]["connectors"].items()]
    audits = {"compose": compose_deploy.consumer.audit.generator, "chart": chart_deploy.consumer.audit.generator}
    readme = (ROOT / "deploy" / "README.md").read_text()
    for deploy, connectors in (("compose", compose_connectors), ("chart", chart_connectors)):
        for config in connectors:
            check_connector({k: str(v) for k, v in config.items()})
            if config["connector.class"] == "access-log-generator":
                assert traffic(config) == traffic(audits[deploy]), f"{deploy}: generator and [audit.generator] differ"
                audit = f"--seed {config['seed']} --count {config['count']}"
                assert audit in readme, f"deploy/README.md does not audit with {audit}"
                assert audit in COMPOSE_FILE.read_text() + templates()["NOTES.txt"]


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
    assert set(HELPERS) <= defined, "the test mirrors named templates that do not exist"


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
def test_chart_config_and_environment_load_through_the_settings_class(values: dict[str, Any], name: str) -> None:
    settings, env, text = chart_settings(values, name)  # raises InvalidConfig naming a bad key or variable
    for key, value in env.items():
        assert "$(" not in value, f"{key}: $(...) refers to a variable defined later or not at all"
        if key.startswith("ONCEFLOW_"):
            assert service_of(key) == name, f"{name} sets {key}, a setting of {service_of(key)}"
    ports = {int(port) for port in re.findall(r"containerPort: (\d+)", text)}
    assert ports == served_ports(settings)
    assert {int(port) for port in re.findall(r"grpc:\s*\n\s*port: (\d+)", text)} <= ports
    assert bootstrap_servers(settings) == {values["kafka"]["bootstrapServers"]}


def test_every_setting_name_in_the_chart_is_real() -> None:
    names = set(SETTING_NAME.findall("".join(templates().values()) + (CHART / "values.yaml").read_text()))
    assert len(names) >= 10
    for name in sorted(names):
        assert_setting_exists(name)


def test_helm_targets_reach_the_servers(chart_deploy: Deploy) -> None:
    check_wiring(chart_deploy, f"{FULLNAME}-")
    helpers = templates()["_helpers.tpl"]
    for piece in ('"bootstrap_servers" $.Values.kafka.bootstrapServers', '"$(POSTGRES_DSN)"', "$(KAFKA_PROPERTIES)"):
        assert piece in helpers, "_helpers.tpl no longer does what tests/deploy/deploy_support.HELPERS mirrors"


def test_chart_creates_the_topics_the_services_use(values: dict[str, Any], chart_deploy: Deploy) -> None:
    definitions = values["kafka"]["topics"]["definitions"]
    created = {name: (spec["partitions"], spec.get("config") or {}) for name, spec in definitions.items()}
    check_topics(created, chart_deploy)
    assert chart_deploy.coordinator.transaction_log.replication_factor == values["kafka"]["replicationFactor"]


def test_single_instances_stay_single(values: dict[str, Any]) -> None:
    texts = templates()
    for name, key in (("coordinator", "coordinator"), ("participant", "participant"), ("spark-worker", "sparkWorker")):
        assert re.search(r"^  replicas: 1$", texts[WORKLOADS[name]], re.MULTILINE), name
        assert "replicas" not in values[key], f"{name} must not be scaled"
    assert "type: Recreate" in texts["coordinator-deployment.yaml"]
    comment = (CHART / "values.yaml").read_text().split("\ncoordinator:")[1].split("\nparticipant:")[0]
    assert "fences the first" in comment


def test_topic_job_runs_the_script(values: dict[str, Any]) -> None:
    job = templates()["topics-job.yaml"]
    assert '"/etc/onceflow/topics/create_topics.py"' in job and "mountPath: /etc/onceflow/topics" in job
    assert "{{ .Values.kafka.topics.definitions | toJson | quote }}" in job


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


def test_compose_servers_on_every_interface_require_the_token_and_clients_send_it(compose: dict[str, Any]) -> None:
    """Issue 14: the container deploy binds 0.0.0.0 with authentication on."""
    servers = ("coordinator", "participant", "consumer", "connect-worker")
    for name in servers:
        settings = compose_settings(compose, name)
        server = getattr(settings, "server")  # noqa: B009 - every serving settings class has one
        assert server.host == "0.0.0.0" and server.auth.token_file == TOKEN_SECRET, name
        assert "grpc_token" in compose["services"][name].get("secrets", []), name
    assert "grpc_token" in compose["services"]["spark-worker"].get("secrets", [])
    clients: dict[str, tuple[str, ...]] = {
        "spark-worker": ("coordinator", "tls"),
        "participant": ("coordinator", "tls"),
        "coordinator": ("participant_tls",),
    }
    for name, path in clients.items():
        section: Any = compose_settings(compose, name)
        for attribute in path:
            section = getattr(section, attribute)
        assert section.token_file == TOKEN_SECRET, name
    assert compose["secrets"]["grpc_token"]["file"] == "./grpc-token"


@pytest.mark.parametrize("name", SETTINGS)
def test_chart_services_mount_the_grpc_token_their_config_names(values: dict[str, Any], name: str) -> None:
    """Issue 14: the chart's servers require the token and its clients send it, from grpcAuth's Secret."""
    settings: Any
    settings, _, text = chart_settings(values, name)
    assert 'include "onceflow.grpcTokenVolume" .' in text and 'include "onceflow.grpcTokenVolumeMount" .' in text
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


@pytest.mark.parametrize("kind", ["compose", "chart"])
def test_every_deployed_server_authenticates_without_onceflow_insecure(
    kind: str, compose_deploy: Deploy, chart_deploy: Deploy, compose: dict[str, Any]
) -> None:
    """Issue 22: a service off loopback refuses to start without authentication (onceflow.core.exposure)
    unless ONCEFLOW_INSECURE=1; the deploys pass the check without it, and never set it."""
    deploy = compose_deploy if kind == "compose" else chart_deploy
    for settings in (deploy.coordinator, deploy.participant, deploy.connect, deploy.spark, deploy.consumer):
        refuse_unauthenticated(listeners_of(settings), env={})
    files = [COMPOSE_FILE, *(CHART / "templates").iterdir(), CHART / "values.yaml", COMPOSE_DIR / ".env.example"]
    assert not [f.name for f in files if INSECURE_ENV in f.read_text()]
