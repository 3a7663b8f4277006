"""deploy/compose: the cluster's compose file holds only settings the services really read, and its
pieces fit together. `make deploy-test` runs it for real; these checks need no Docker and name the
file and setting that is wrong.

Every onceflow container's ``--config`` file and ``ONCEFLOW_...`` environment load through the
service's own settings class (its Kafka login, a secret at run time, is a stand-in file here).
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from onceflow.acls import Topology, plan
from onceflow.acls.cli import principal_map
from onceflow.broker.acl import ResourceType
from onceflow.consumer.loop.metrics import ConsumerMetrics
from onceflow.consumer.settings import ConsumerSettings
from onceflow.coordinator.metrics import CoordinatorMetrics
from onceflow.coordinator.settings import CoordinatorSettings
from onceflow.core.exposure import INSECURE_ENV, listeners_of, refuse_unauthenticated
from onceflow.core.settings import Settings, base
from onceflow.runtime.config.worker_settings import WorkerSettings
from onceflow.runtime.worker.metrics import WorkerMetrics
from onceflow.sinks.server.metrics import ParticipantMetrics
from onceflow.sinks.server.settings import KafkaSink, ParticipantSettings
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.runner.metrics import JobMetrics
from onceflow.spark.runner.topology import check_shared_storage

from .deploy_checks import check_connector, check_topics
from .deploy_support import (
    COMPOSE_DIR,
    COMPOSE_FILE,
    ROOT,
    SETTING_NAME,
    Deploy,
    assert_setting_exists,
    compose_variables,
    env_example,
    host_path,
    interpolate,
    load_compose,
    load_service_settings,
    served_ports,
    service_of,
)

#: The onceflow images (targets of services/Dockerfile) and the other images `make images` builds.
TARGETS = set(re.findall(r"^FROM onceflow AS ([\w-]+)$", (ROOT / "services" / "Dockerfile").read_text(), re.M))
OTHER_IMAGES = {"kafka", "postgres", "prometheus", "s3proxy"}
TOKEN_SECRET = "/run/secrets/grpc_token"
KAFKA_LOGIN = "/run/secrets/kafka_client"
BROKERS = ["kafka-1", "kafka-2", "kafka-3"]
TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose()


@pytest.fixture(autouse=True)
def kafka_logins(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Stand in for the Kafka login files (secrets at run time): the files read are recorded."""
    read: list[str] = []

    def fake(path: str) -> dict[str, str]:
        read.append(path)
        return {"sasl.username": "principal", "sasl.password": "secret"}

    monkeypatch.setattr(base, "read_properties_file", fake)
    yield read


def image_target(service: dict[str, Any]) -> str:
    """The image of a compose service, without its prefix and tag: a services/Dockerfile target or a
    deploy/images one."""
    image = interpolate(service["image"], env_example())
    match = re.fullmatch(r"onceflow-([\w-]+):[\w.-]+", image)
    assert match is not None, f"{image} is not an image of make images"
    return match.group(1)


def onceflow_services(compose: dict[str, Any]) -> dict[str, tuple[str, Path]]:
    """Every container that runs an onceflow service: (settings class key, host path of its --config)."""
    found = {}
    for name, service in compose["services"].items():
        argv = [*service.get("entrypoint", []), *service.get("command", [])]
        if "--config" not in argv or image_target(service) not in TARGETS:
            continue
        config = argv[argv.index("--config") + 1]
        kind = "spark-worker" if argv[:3] == ["onceflow", "job", "run"] else image_target(service)
        if argv[:3] == ["onceflow", "txn", "init-log"]:
            kind = "coordinator"
        found[name] = (kind, host_path(service, config))
    return found


def settings_of(compose: dict[str, Any], name: str) -> Settings:
    """What the container's process loads: its --config file plus its ONCEFLOW_ environment."""
    kind, config = onceflow_services(compose)[name]
    environment = compose["services"][name].get("environment") or {}
    env = {key: interpolate(value, env_example()) for key, value in environment.items() if key.startswith("ONCEFLOW_")}
    return load_service_settings(kind, config, env)


def typed(compose: dict[str, Any], name: str, model: type[Any]) -> Any:
    settings = settings_of(compose, name)
    assert isinstance(settings, model), f"{name} loads {type(settings).__name__}, not {model.__name__}"
    return settings


# --- the services and their settings ----------------------------------------------------------------


def test_the_cluster_runs_every_piece(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"kafka-1", "kafka-2", "kafka-3", "postgres", "prometheus", "spark-master"} <= set(services)
    kinds: dict[str, list[str]] = {}
    for name, (kind, _) in onceflow_services(compose).items():
        kinds.setdefault(kind, []).append(name)
    assert sorted(kinds["participant"]) == ["participant-0", "participant-1"]
    assert {"coordinator-1", "coordinator-2"} <= set(kinds["coordinator"])
    assert sorted(kinds["spark-worker"]) == ["job-ipcount", "job-traffic"]
    assert kinds["consumer"] == ["consumer"] and kinds["connect-worker"] == ["connect-worker"]
    workers = [
        n for n, s in services.items() if s.get("entrypoint", [None])[-1] == "org.apache.spark.deploy.worker.Worker"
    ]
    assert sorted(workers) == ["spark-worker-1", "spark-worker-2"]


def test_every_image_is_one_make_images_builds(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        assert image_target(service) in TARGETS | OTHER_IMAGES, name
        assert "build" not in service, f"{name}: images come from make images (deploy/images/build.sh)"
    build = (ROOT / "deploy" / "images" / "build.sh").read_text()
    for image in OTHER_IMAGES - {"s3proxy"}:
        assert f"build {image} deploy/images/{image}/Dockerfile" in build
        assert "ARG BASE_IMAGE=debian:bookworm-slim" in (ROOT / "deploy" / "images" / image / "Dockerfile").read_text()


def test_only_the_spark_image_carries_the_s3a_jars_its_checkpoints_need() -> None:
    """The jobs' checkpoints are on s3a://, so every Spark JVM needs hadoop-aws: the driver checks
    ONCEFLOW_HADOOP_AWS_CLASSPATH at start (exit 2 naming checkpoint_location without it)."""
    dockerfile = (ROOT / "services" / "Dockerfile").read_text()
    stages = re.split(r"^FROM ", dockerfile, flags=re.M)
    assert stages[-1].startswith("onceflow AS spark-worker"), "the last stage: no other target passes its jars"
    assert "ONCEFLOW_HADOOP_AWS_CLASSPATH=${HADOOP_AWS_CLASSPATH}" in stages[-1]
    assert not any(".cache/images/hadoop-aws" in stage for stage in stages[:-1])
    build = (ROOT / "deploy" / "images" / "build.sh").read_text()
    assert '--build-arg "HADOOP_AWS_CLASSPATH=$classpath"' in build
    assert "!.cache/images/hadoop-aws/" in (ROOT / ".dockerignore").read_text().splitlines()


@pytest.mark.parametrize(
    "name",
    ["coordinator-1", "participant-0", "participant-1", "job-ipcount", "job-traffic", "consumer", "connect-worker"],
)
def test_config_and_environment_load_through_the_settings_class(compose: dict[str, Any], name: str) -> None:
    kind, _ = onceflow_services(compose)[name]
    for key in compose["services"][name].get("environment") or {}:
        assert key.startswith("ONCEFLOW_"), f"{name}: {key} is not a setting"
        assert service_of(key) == kind, f"{name} sets {key}, a setting of {service_of(key)}"
    settings_of(compose, name)  # raises InvalidConfig naming a bad file key or variable


def test_every_setting_name_in_the_compose_deploy_is_real() -> None:
    text = COMPOSE_FILE.read_text() + (COMPOSE_DIR / ".env.example").read_text()
    text += (COMPOSE_DIR / "test" / "broken-settings.yml").read_text()
    names = set(SETTING_NAME.findall(text))
    assert len(names) >= 8
    for name in sorted(names):
        assert_setting_exists(name)


def test_compose_variables_are_documented_with_the_same_defaults() -> None:
    example = env_example()
    for name, default in compose_variables().items():
        assert name in example, f"${{{name}}} is not in .env.example"
        assert default in (None, "") or default == example[name], f"{name}: default {default!r} != {example[name]!r}"
    assert set(example) <= set(compose_variables()), "variables of .env.example that compose ignores"


# --- Kafka: three nodes, SASL, a login per service -------------------------------------------------


def test_kafka_is_three_kraft_nodes_with_replication_three_and_two_in_sync(compose: dict[str, Any]) -> None:
    voters = set()
    for index, name in enumerate(BROKERS, start=1):
        env = {k: interpolate(v, env_example()) for k, v in compose["services"][name]["environment"].items()}
        assert env["KAFKA_NODE_ID"] == str(index)
        assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
        assert env["KAFKA_ADVERTISED_LISTENERS"] == f"CLIENT://{name}:9092"
        voters.add(env["KAFKA_CONTROLLER_QUORUM_VOTERS"])
        assert env["KAFKA_DEFAULT_REPLICATION_FACTOR"] == env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "3"
        assert env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == "3"
        assert env["KAFKA_MIN_INSYNC_REPLICAS"] == env["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"] == "2"
        # Every listener authenticates: SCRAM for clients and brokers, PLAIN between brokers and controllers.
        protocols = dict(pair.split(":") for pair in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
        assert set(protocols.values()) == {"SASL_PLAINTEXT"}
        assert env["KAFKA_LISTENER_NAME_CLIENT_SASL_ENABLED_MECHANISMS"] == "SCRAM-SHA-512"
        assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
        assert "./secrets/kafka:/etc/kafka/conf.d:ro" in compose["services"][name]["volumes"]
    assert voters == {"1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093"}


def test_every_service_logs_in_to_kafka_as_its_own_principal(compose: dict[str, Any], kafka_logins: list[str]) -> None:
    """SASL on every client, the login from a secret mounted into that service alone."""
    principal_of: dict[str, str] = {}
    for name, (kind, _) in onceflow_services(compose).items():
        settings = settings_of(compose, name)
        kafkas = [settings.kafka] if hasattr(settings, "kafka") else []
        if isinstance(settings, ParticipantSettings):
            kafkas = [sink.options.kafka for sink in settings.sinks if isinstance(sink, KafkaSink)]
        for kafka in kafkas:
            assert kafka.bootstrap_servers == ",".join(f"{b}:9092" for b in BROKERS), name
            assert kafka.properties["security.protocol"] == "SASL_PLAINTEXT", name
            assert kafka.properties["sasl.mechanisms"] == "SCRAM-SHA-512", name
            assert kafka.properties_file == KAFKA_LOGIN, name
        secrets = [s for s in compose["services"][name].get("secrets", []) if isinstance(s, dict)]
        logins = [s["source"] for s in secrets if s.get("target") == "kafka_client"]
        assert len(logins) == 1, f"{name} must mount exactly one Kafka login at {KAFKA_LOGIN}"
        principal_of.setdefault(logins[0], kind)
        assert principal_of[logins[0]] == kind, f"{logins[0]} is shared by {kind} and {principal_of[logins[0]]}"
    assert KAFKA_LOGIN in kafka_logins
    init = compose["services"]["kafka-init"]
    assert init["environment"]["KAFKA_PROPERTIES_FILE"] == KAFKA_LOGIN
    assert {"source": "kafka_admin", "target": "kafka_client"} in init["secrets"]


def kafka_init_steps(compose: dict[str, Any]) -> list[list[str]]:
    """kafka-init's command, one argv per ``&&`` step (``$$`` is compose's escape of ``$``)."""
    entrypoint = compose["services"]["kafka-init"]["entrypoint"]
    assert entrypoint[:2] == ["bash", "-c"]
    return [shlex.split(step) for step in entrypoint[2].replace("$$", "$").split("&&")]


def test_kafka_init_applies_least_privilege_acls_for_every_service_before_any_starts(
    compose: dict[str, Any],
) -> None:
    """StandardAuthorizer, nothing open, super users the brokers and the admin; kafka-init applies
    the ACLs of the configs the containers really run with, each service under the principal of the
    login it mounts, and every Kafka client starts after it."""
    services = compose["services"]
    for name in BROKERS:
        env = services[name]["environment"]
        assert env["KAFKA_AUTHORIZER_CLASS_NAME"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
        assert env["KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND"] == "false"
        assert env["KAFKA_SUPER_USERS"] == "User:broker;User:admin"
    init = services["kafka-init"]
    topics, apply = kafka_init_steps(compose)
    assert topics[0] == "python"
    assert host_path(init, topics[1]) == ROOT / "deploy" / "helm" / "onceflow" / "files" / "create_topics.py"
    assert apply[:4] == ["exec", "onceflow", "acls", "apply"]
    assert apply[apply.index("--command-config") + 1] == KAFKA_LOGIN
    principals = principal_map(init["environment"]["PRINCIPAL_MAP"])
    pairs = [pair.partition("=") for flag, pair in itertools.pairwise(apply) if flag == "--config"]
    configs = {(service, host_path(init, path)) for service, _, path in pairs}
    acl_service = {"connect-worker": "connect", "spark-worker": "spark"}
    expected_principals: dict[str, str] = {}
    for name, (kind, config) in onceflow_services(compose).items():
        service = acl_service.get(kind, kind)
        assert (service, config) in configs, f"kafka-init plans no ACLs for {name}'s config {config}"
        login = next(s["source"] for s in services[name]["secrets"] if isinstance(s, dict) and s.get("target"))
        expected_principals[service] = "User:" + login.removeprefix("kafka_")
        assert "kafka-init" in upstream(services, name), f"{name} may start before the ACLs are in place"
    assert principals == expected_principals
    users = re.search(r"^PRINCIPALS=\((.*)\)$", (COMPOSE_DIR / "secrets.sh").read_text(), re.M)
    assert users is not None and {p.removeprefix("User:") for p in principals.values()} <= set(users.group(1).split())
    # the plan of those configs: the coordinator alone writes its log, nobody else gets more than READ on it
    by_service: dict[str, list[Path]] = {}
    for service, path in sorted(configs):
        by_service.setdefault(service, []).append(path)
    grants = plan(Topology.load(by_service))
    acls = [(g.service, g.resource_type, g.pattern_type, g.name, g.operation) for g in grants]
    assert len(acls) == len(set(acls)), "an ACL planned twice (the Admin API refuses duplicate bindings)"
    log_topic = typed(compose, "coordinator-1", CoordinatorSettings).transaction_log.topic
    assert {g.service for g in grants if g.name == log_topic} == {"coordinator"}
    shard_prefixes = {g.name for g in grants if g.service == "participant" and g.resource_type == TRANSACTIONAL_ID}
    assert len(shard_prefixes) == 2, shard_prefixes


def upstream(services: dict[str, Any], name: str) -> set[str]:
    """Every service ``name`` waits for, directly or not (depends_on)."""
    found: set[str] = set()
    todo = [name]
    while todo:
        for dependency in services[todo.pop()].get("depends_on") or {}:
            if dependency not in found:
                found.add(dependency)
                todo.append(dependency)
    return found


def test_the_topics_the_services_use_are_created_with_replication_three(compose: dict[str, Any]) -> None:
    init = compose["services"]["kafka-init"]
    env = init["environment"]
    assert env["REPLICATION_FACTOR"] == 3 and env["MIN_BROKERS"] == 3
    topics = json.loads(interpolate(env["TOPICS"], env_example()))
    created = {name: (spec["partitions"], spec.get("config", {})) for name, spec in topics.items()}
    deploy = Deploy(
        typed(compose, "coordinator-1", CoordinatorSettings),
        typed(compose, "participant-0", ParticipantSettings),
        typed(compose, "connect-worker", WorkerSettings),
        typed(compose, "job-ipcount", SparkJobSettings),
        typed(compose, "consumer", ConsumerSettings),
    )
    check_topics(created, deploy)
    log = created[deploy.coordinator.transaction_log.topic][1]
    assert log["retention.ms"] == log["retention.bytes"] == "-1", "the coordinator refuses a bounded log"
    coordinator_init = compose["services"]["coordinator-init"]
    assert coordinator_init["entrypoint"][:3] == ["onceflow", "txn", "init-log"]
    assert typed(compose, "coordinator-1", CoordinatorSettings).transaction_log.init_if_missing is False


# --- the wiring: shards, standby, staging ------------------------------------------------------------


def test_the_participant_shards_split_kafka_and_postgres_and_the_jobs_name_them_in_order(
    compose: dict[str, Any],
) -> None:
    shards = [typed(compose, f"participant-{i}", ParticipantSettings) for i in (0, 1)]
    for index, settings in enumerate(shards):
        by_name = {sink.name: sink for sink in settings.sinks}
        for sink in ("kafka", "postgres"):
            assert (by_name[sink].shard, by_name[sink].shards) == (index, 2), f"participant-{index} {sink}"
    assert "sqlite" in {s.name for s in shards[0].sinks} and "sqlite" not in {s.name for s in shards[1].sinks}
    targets = ["participant-0:7101", "participant-1:7101"]
    for job in ("job-ipcount", "job-traffic"):
        spark = typed(compose, job, SparkJobSettings)
        for participant in spark.participants:
            expected = targets if participant.sink in ("kafka", "postgres") else ["participant-0:7101"]
            if participant.sink == "sqlite":
                assert participant.target == "participant-0:7101" and not participant.targets, job
                continue
            assert (participant.targets or [participant.target]) == expected, f"{job}: {participant.sink}"
        assert spark.spark.master == "spark://spark-master:7077"
        assert spark.spark.conf["spark.driver.host"] == job, "executors reach the driver by its container name"


def test_clients_name_both_coordinators_and_each_advertises_itself(compose: dict[str, Any]) -> None:
    both = "coordinator-1:7100,coordinator-2:7100"
    for name in ("participant-0", "participant-1", "job-ipcount", "job-traffic"):
        assert settings_of(compose, name).coordinator.target == both, name  # type: ignore[attr-defined]
    for name in ("coordinator-1", "coordinator-2"):
        settings = typed(compose, name, CoordinatorSettings)
        assert settings.standby.enabled and settings.standby.advertised_target == f"{name}:7100"
        assert settings.transaction_log.replication_factor == 3


def test_staging_and_checkpoints_are_on_the_object_store_and_no_spark_volume_is_shared(compose: dict[str, Any]) -> None:
    services = compose["services"]
    root = typed(compose, "job-ipcount", SparkJobSettings).staging_root
    bucket = root.removeprefix("s3://").split("/")[0]
    buckets = services["s3proxy"]["environment"]["S3PROXY_BUCKETS"].split(",")
    assert root.startswith("s3://") and buckets == [bucket, "onceflow-checkpoints"]
    assert not services["s3proxy"].get("ports"), "the object store is not published on the host"
    # Least privilege: the store's login goes to the services that stage, read or delete batches only
    # (the executors get it from their driver), and no service mounts staging as a volume.
    stores = {"coordinator-1", "coordinator-2", "participant-0", "participant-1", "job-ipcount", "job-traffic"}
    for name, service in services.items():
        assert ("secrets/s3.env" in service.get("env_file", [])) == (name in stores), name
        assert not any(str(v).startswith("staging:") for v in service.get("volumes", [])), name
    for name in ("coordinator-1", "coordinator-2"):
        settings = typed(compose, name, CoordinatorSettings)
        assert (settings.staging_root, settings.staging.s3.endpoint_url) == (root, "http://s3proxy:8080"), name
    for name in ("participant-0", "participant-1"):
        staging = typed(compose, name, ParticipantSettings).staging
        assert (staging.roots, staging.allowed_schemes, staging.s3.endpoint_url) == (
            [root],
            ["s3"],
            "http://s3proxy:8080",
        ), name
    # Nothing Spark writes is on a volume: a worker or driver may start on any node.
    for name in ("spark-master", "job-ipcount", "job-traffic", "spark-worker-1", "spark-worker-2"):
        assert all(
            str(v).startswith("./config:")
            for v in services[name].get("volumes", [])
            if not str(v).startswith("participant-0-data:")
        ), name
    checkpoints = set()
    for name in ("job-ipcount", "job-traffic"):
        # what the driver checks at start on its standalone master: nothing local, nothing declared shared
        job = typed(compose, name, SparkJobSettings)
        assert (job.staging_root, job.staging.s3.endpoint_url) == (root, "http://s3proxy:8080"), name
        assert job.spark.master.startswith("spark://") and not job.checkpoint_shared, name
        assert job.checkpoint_location.startswith("s3a://onceflow-checkpoints/"), name
        assert not job.checkpoint_location.startswith(root.replace("s3://", "s3a://")), "outside every staging root"
        check_shared_storage(job, job.spark.master)
        checkpoints.add(job.checkpoint_location)
    assert len(checkpoints) == 2, "one checkpoint per job"


def test_the_log_producer_tails_the_input_volume_the_audit_recounts(compose: dict[str, Any]) -> None:
    worker = typed(compose, "connect-worker", WorkerSettings)
    assert worker.mode == "distributed", "a restarted worker must find its connector in Kafka"
    document = json.loads((COMPOSE_DIR / "config" / "access-log-file.json").read_text())
    connector = document["config"]
    check_connector({**connector, "name": document["name"]})
    assert connector["end.of.input"] == "eof"
    assert Path(connector["file"]).parent == Path(worker.allowed_paths[0])
    assert "input:/var/lib/onceflow/input" in compose["services"]["connect-worker"]["volumes"]
    assert "input:/var/lib/onceflow/input:ro" in compose["services"]["consumer"]["volumes"]
    consumer = typed(compose, "consumer", ConsumerSettings)
    sqlite = [sink for sink in consumer.audit.sinks if sink.kind == "sqlite"]
    assert (
        sqlite and "participant-0-data:/var/lib/onceflow/participant:ro" in compose["services"]["consumer"]["volumes"]
    )


# --- security and exposure -------------------------------------------------------------------------


def test_servers_off_loopback_require_the_token_and_clients_send_it(compose: dict[str, Any]) -> None:
    for name, (kind, _) in onceflow_services(compose).items():
        settings: Any = settings_of(compose, name)
        refuse_unauthenticated(listeners_of(settings), env={})  # no ONCEFLOW_INSECURE needed
        if hasattr(settings, "server"):
            assert settings.server.host == "0.0.0.0" and settings.server.auth.token_file == TOKEN_SECRET, name
        for client in ("coordinator", "participant_tls"):
            section = getattr(settings, client, None)
            tls = getattr(section, "tls", section)
            if tls is not None and hasattr(tls, "token_file") and kind != "consumer":
                assert tls.token_file == TOKEN_SECRET, f"{name}: {client}"
        assert "grpc_token" in compose["services"][name].get("secrets", []), name
    text = COMPOSE_FILE.read_text() + (COMPOSE_DIR / ".env.example").read_text()
    assert INSECURE_ENV not in text


def test_only_the_results_api_and_prometheus_are_published_on_loopback(compose: dict[str, Any]) -> None:
    published = {}
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            host, _, container = interpolate(port, env_example()).rpartition(":")
            assert host.startswith("127.0.0.1:"), f"{name}: {port} is not bound to 127.0.0.1"
            published[name] = int(container)
    assert published == {"consumer": 7200, "prometheus": 9090}


def test_services_have_healthchecks_and_start_in_order(compose: dict[str, Any]) -> None:
    services = compose["services"]
    one_shots = {name for name, s in services.items() if s.get("restart") == "no"}
    assert one_shots == {"kafka-init", "coordinator-init"}
    for name, service in services.items():
        if name not in one_shots:
            assert "healthcheck" in service, f"{name} has no health check"
            assert service.get("restart") == "unless-stopped", name
        for dependency, spec in (service.get("depends_on") or {}).items():
            expected = "service_completed_successfully" if dependency in one_shots else "service_healthy"
            assert spec["condition"] == expected, f"{name} -> {dependency}"
    for name, (_, _) in onceflow_services(compose).items():
        if name in one_shots:
            continue
        check = " ".join(services[name]["healthcheck"]["test"])
        assert any(f"127.0.0.1:{port}" in check for port in served_ports(settings_of(compose, name))), name
    assert set(services["participant-0"]["depends_on"]) >= {"postgres", "coordinator-1", "coordinator-2"}
    assert set(services["job-ipcount"]["depends_on"]) >= {"participant-0", "participant-1", "spark-worker-1"}


# --- Prometheus ------------------------------------------------------------------------------------


def test_prometheus_scrapes_every_onceflow_service(compose: dict[str, Any]) -> None:
    config = yaml.safe_load((COMPOSE_DIR / "prometheus" / "prometheus.yml").read_text())
    scraped = {t for job in config["scrape_configs"] for group in job["static_configs"] for t in group["targets"]}
    expected = set()
    for name, (_, _) in onceflow_services(compose).items():
        if compose["services"][name].get("restart") != "no":
            expected.add(f"{name}:{settings_of(compose, name).metrics.port}")  # type: ignore[attr-defined]
    assert scraped == expected
    assert config["rule_files"] == ["/etc/prometheus/rules.yml"]
    assert "./prometheus:/etc/prometheus:ro" in compose["services"]["prometheus"]["volumes"]


def exported_metrics() -> set[str]:
    """The name of every sample the onceflow services export (their metrics classes' registries)."""
    names = set()
    services = [m.service for m in (CoordinatorMetrics(), ParticipantMetrics(), ConsumerMetrics(), WorkerMetrics())]
    for service in [*services, JobMetrics().metrics]:
        for family in service.registry.collect():
            suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}.get(family.type, [""])
            names |= {family.name + suffix for suffix in suffixes}
    return names


def test_the_alert_rules_and_the_dashboard_use_metrics_the_services_export() -> None:
    rules = (COMPOSE_DIR / "prometheus" / "rules.yml").read_text()
    dashboard = json.loads((COMPOSE_DIR / "grafana" / "onceflow.json").read_text())
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    used = set(re.findall(r"\bonceflow_[a-z_]+", rules + "\n".join(expressions)))
    assert len(used) >= 10
    assert used <= exported_metrics(), f"no service exports {sorted(used - exported_metrics())}"
    groups = yaml.safe_load(rules)["groups"]
    alerts = {rule["alert"] for group in groups for rule in group["rules"]}
    assert alerts == {"OnceflowInDoubtTransactionsStuck", "OnceflowJobStalled", "OnceflowConsumerLagging",
                      "OnceflowServiceDown"}  # fmt: skip
    tested = (COMPOSE_DIR / "prometheus" / "rules.test.yml").read_text()
    assert all(f"alertname: {alert}" in tested for alert in alerts), "promtool tests every alert"


class ComposeLoader(yaml.SafeLoader):
    """YAML with compose's ``!reset`` tag (an override that empties a list)."""


ComposeLoader.add_constructor("!reset", lambda loader, node: None)


def test_the_broken_settings_of_the_deploy_test_are_one_setting_each() -> None:
    text = (COMPOSE_DIR / "test" / "broken-settings.yml").read_text()
    broken = yaml.load(text, Loader=ComposeLoader)["services"]  # a SafeLoader with one more tag
    assert set(broken) == {"consumer-bad-dsn", "coordinator-no-token"}
    assert "ONCEFLOW_CONSUMER__STORE__DSN" in broken["consumer-bad-dsn"]["environment"]
    assert broken["coordinator-no-token"]["environment"] == {
        "ONCEFLOW_COORDINATOR__SERVER__AUTH__TOKEN_FILE": "/run/secrets/no_such_token"
    }
    script = (COMPOSE_DIR / "deploy-test.sh").read_text()
    assert (
        "broken consumer-bad-dsn consumer store.dsn" in script
        and "broken coordinator-no-token coordinator server.auth.token_file" in script
    )
