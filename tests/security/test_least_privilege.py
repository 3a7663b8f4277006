"""Least privilege on either broker (issue 22, items 2 and 5): with the ACLs of ``onceflow acls apply``
in place, SASL on and nothing open by default, each forgery of the issue is refused with
``*_AUTHORIZATION_FAILED``, and the whole pipeline, every service under its own principal, still ends
EXACT.

Each broker kind gets one secured broker for the module: SASL/PLAIN, an ACL authorizer (the embedded
broker's, Apache Kafka's ``StandardAuthorizer``), ``admin`` the only super user,
``allow.everyone.if.no.acl.found=false``. The ACLs are applied by the real command line.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from onceflow.broker.embedded import BrokerProcess
from onceflow.coordinator.log.log_topic import LOG_TOPIC_CONFIG
from onceflow.core.topics import CONNECT_CONFIGS_TOPIC, COORDINATOR_LOG_TOPIC
from onceflow.demo.components.consumer import CONSUMER_GROUP as DEMO_CONSUMER_GROUP
from onceflow.testing.broker.security import KINDS, BrokerProcesses, sasl_config, start_secured_broker

ONCEFLOW = str(Path(sys.executable).parent / "onceflow")
#: principal (user) of each service, as ``--principal-map`` and the demo's logins name them
PRINCIPALS = {"coordinator": "coordinator", "connect": "connect", "participant": "participant",
              "consumer": "results", "spark": "spark"}  # fmt: skip
USERS = {"admin": "admin-secret", "mallory": "mallory-secret", **{u: f"{u}-secret" for u in PRINCIPALS.values()}}
EVENTS = 3000


@dataclass
class Secured:
    kind: str
    broker: BrokerProcess
    apply_output: str

    def config(self, user: str, **extra: Any) -> dict[str, Any]:
        return {**sasl_config(self.broker.bootstrap_servers, user, USERS[user]), **extra}

    def admin_properties(self) -> list[str]:
        """``-X`` arguments of the admin login."""
        pairs = {k: v for k, v in self.config("admin").items() if k != "bootstrap.servers"}
        return [arg for key, value in pairs.items() for arg in ("-X", f"{key}={value}")]


@pytest.fixture(scope="module", params=KINDS)
def secured(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    processes = BrokerProcesses()
    try:
        broker = start_secured_broker(
            request.param,
            tmp_path_factory.mktemp(f"least-privilege-{request.param}"),
            users=USERS,
            super_users=["admin"],
            allow_everyone_if_no_acl_found=False,
            embedded_factory=processes.embedded,
            apache_kafka_factory=processes.apache_kafka,
        )
        secured = Secured(request.param, broker, "")
        principal_map = ",".join(f"{service}=User:{user}" for service, user in PRINCIPALS.items())
        # the demo's consumer runs in a group of its own; every other name is a service default
        consumer_config = tmp_path_factory.mktemp("acl-configs") / "consumer.toml"
        consumer_config.write_text(f'[consumer]\ngroup_id = "{DEMO_CONSUMER_GROUP}"\n')
        # the admin's login as the deploys pass it: its user and password in a --command-config file
        login = consumer_config.with_name("admin.properties")
        login.write_text(f"sasl.username=admin\nsasl.password={USERS['admin']}\n")
        properties = [
            arg
            for key, value in secured.config("admin").items()
            if key not in ("bootstrap.servers", "sasl.username", "sasl.password")
            for arg in ("-X", f"{key}={value}")
        ]
        applied = subprocess.run(
            [ONCEFLOW, "acls", "apply", "--bootstrap-servers", broker.bootstrap_servers, *properties,
             "--command-config", str(login), "--principal-map", principal_map,
             "--config", f"consumer={consumer_config}"],
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        assert applied.returncode == 0, applied.stdout + applied.stderr
        secured.apply_output = applied.stdout
        yield secured
    finally:
        processes.stop()


def _code(exc: BaseException) -> str:
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return error.name() if isinstance(error, KafkaError) else repr(exc)


def _produce(secured: Secured, user: str, topic: str) -> str:
    """Produce one record as ``user``: the delivery error's name, or NO_ERROR."""
    outcome: list[str] = []
    producer = Producer(secured.config(user, **{"message.timeout.ms": 15000}))
    producer.produce(topic, b"forged", on_delivery=lambda err, _msg: outcome.append(err.name() if err else "NO_ERROR"))
    producer.flush(30)
    return outcome[0] if outcome else "no delivery report"


def _init_transactions(secured: Secured, user: str, transactional_id: str) -> str:
    producer = Producer(secured.config(user, **{"transactional.id": transactional_id}))
    try:
        producer.init_transactions(30)
    except KafkaException as exc:
        return _code(exc)
    return "NO_ERROR"


def _delete_topic(secured: Secured, user: str, topic: str) -> str:
    admin = AdminClient(secured.config(user))
    try:
        admin.delete_topics([topic], operation_timeout=30)[topic].result(30)
    except KafkaException as exc:
        return _code(exc)
    return "NO_ERROR"


def test_acls_apply_reports_every_service_in_place(secured: Secured) -> None:
    for service, user in PRINCIPALS.items():
        assert f"{service}: " in secured.apply_output and f"ACLs in place for User:{user}" in secured.apply_output


def test_each_forgery_is_refused(secured: Secured) -> None:
    # the topics as their owners create them (the pipeline test runs on them next)
    admin = AdminClient(secured.config("admin"))
    topics = [
        NewTopic(COORDINATOR_LOG_TOPIC, 1, 1, config=dict(LOG_TOPIC_CONFIG)),
        NewTopic(CONNECT_CONFIGS_TOPIC, 1, 1, config={"cleanup.policy": "compact"}),
    ]
    for future in admin.create_topics(topics).values():
        try:
            future.result(30)
        except KafkaException as exc:
            assert _code(exc) == "TOPIC_ALREADY_EXISTS"
    time.sleep(1)  # Apache Kafka: the broker applies the controller's topic records a moment later
    # forged decisions: a non-coordinator writes into the decision log
    for user in ("participant", "mallory"):
        assert _produce(secured, user, COORDINATOR_LOG_TOPIC) == "TOPIC_AUTHORIZATION_FAILED", user
    # fencing the coordinator: anyone else initialising its transactional id
    for user in ("participant", "mallory"):
        assert _init_transactions(secured, user, "onceflow-coordinator") == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    # forged connectors: writing Connect's configs topic
    for user in ("spark", "mallory"):
        assert _produce(secured, user, CONNECT_CONFIGS_TOPIC) == "TOPIC_AUTHORIZATION_FAILED", user
    # a lost decision log: deleting it, even as the coordinator
    for user in ("coordinator", "mallory"):
        assert _delete_topic(secured, user, COORDINATOR_LOG_TOPIC) == "TOPIC_AUTHORIZATION_FAILED", user
    # ... and the owner still does what it owns (Connect writing its topics: the pipeline test)
    assert _init_transactions(secured, "coordinator", "onceflow-coordinator") == "NO_ERROR"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_pipeline_is_exact_with_least_privilege(secured: Secured, tmp_path: Path) -> None:
    logins = [
        arg
        for service, user in PRINCIPALS.items()
        for pair in (f"sasl.username={user}", f"sasl.password={USERS[user]}")
        for arg in ("--service-property", f"{service}:{pair}")
    ]
    log_start = len(secured.broker.log_path.read_text()) if secured.kind == "embedded" else 0
    run = subprocess.run(
        [ONCEFLOW, "demo", "--plain", "--run-dir", str(tmp_path / "run"),
         "--bootstrap-servers", secured.broker.bootstrap_servers, *secured.admin_properties(), *logins,
         "--events", str(EVENTS), "--rate", "1500", "--timeout", "300"],
        capture_output=True, text=True, timeout=540, check=False,
    )  # fmt: skip
    output = run.stdout + run.stderr
    tail = "\n".join(output.splitlines()[-60:])
    assert run.returncode == 0, tail
    verdict = output.rsplit("== verdict", 1)[-1]
    for sink in ("kafka", "sqlite", "consumer", "overall"):
        assert any(line.split()[:2] == [sink, "EXACT"] for line in verdict.splitlines()), tail
    assert f"{EVENTS} events" in output
    if secured.kind == "embedded":  # the plan is complete: no service was refused anything on the way
        since_start = secured.broker.log_path.read_text()[log_start:].splitlines()
        denied = [line for line in since_start if "acl.denied" in line]
        assert not denied, denied[:10]
