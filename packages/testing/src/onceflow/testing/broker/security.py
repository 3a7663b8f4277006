"""Secured brokers for tests: SASL/PLAIN logins and ACLs enforced, on either broker kind.

``start_secured_broker(kind, ...)`` starts an embedded broker (SASL_PLAINTEXT listener, its ACL
authorizer) or an Apache Kafka (SASL_PLAINTEXT on every listener, ``StandardAuthorizer``) with the
same users, super users and ``allow.everyone.if.no.acl.found``, through the test's factory (which
stops it at teardown). ``sasl_config`` is the librdkafka configuration of one user.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from onceflow.broker.auth import CredentialStore
from onceflow.broker.embedded import BrokerProcess

__all__ = ["KINDS", "BrokerProcesses", "add_embedded_users", "sasl_config", "start_secured_broker"]

KINDS = ("embedded", "apache-kafka")
"""The broker kinds a secured broker can be."""


class BrokerProcesses:
    """Broker factories for fixtures wider than a test (module scope), where the function-scoped
    ``broker_factory`` and ``apache_kafka_factory`` cannot be used: :meth:`stop` stops every broker
    they started."""

    def __init__(self) -> None:
        self.started: list[BrokerProcess] = []

    def embedded(self, data_dir: Path, **options: Any) -> BrokerProcess:
        """An :class:`~onceflow.broker.embedded.EmbeddedBroker`, started."""
        from onceflow.broker.embedded import EmbeddedBroker

        self.started.append(EmbeddedBroker(data_dir, **options))
        return self.started[-1].start()

    def apache_kafka(self, data_dir: Path, **options: Any) -> BrokerProcess:
        """An :class:`~onceflow.testing.broker.apache_kafka.ApacheKafka`, started."""
        from onceflow.testing.broker.apache_kafka import ApacheKafka

        self.started.append(ApacheKafka(data_dir, **options))
        return self.started[-1].start()

    def stop(self) -> None:
        """Stop every broker started here."""
        for broker in self.started:
            broker.stop()


def sasl_config(bootstrap: str, user: str, password: str) -> dict[str, str | int | float | bool]:
    """librdkafka settings to log in as ``user`` with SASL/PLAIN."""
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
    }


def add_embedded_users(data_dir: Path, users: Mapping[str, str]) -> None:
    """Give every user a PLAIN and SCRAM credential in an embedded broker's data dir."""
    store = CredentialStore(data_dir)
    for user, password in users.items():
        for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            store.add(user, mechanism, password)


def start_secured_broker(
    kind: str,
    data_dir: Path,
    *,
    users: Mapping[str, str],
    super_users: Sequence[str],
    allow_everyone_if_no_acl_found: bool,
    embedded_factory: Callable[..., BrokerProcess],
    apache_kafka_factory: Callable[..., BrokerProcess],
    **options: Any,
) -> BrokerProcess:
    """A started broker of ``kind`` where ``users`` log in and ACLs decide (see module docs).

    ``super_users`` are principals (``User:admin``); ``options`` go to the embedded broker's settings.
    """
    principals = [p if p.startswith("User:") else f"User:{p}" for p in super_users]
    if kind == "embedded":
        add_embedded_users(data_dir, users)
        return embedded_factory(
            data_dir,
            security_protocol="SASL_PLAINTEXT",
            authorizer="acl",
            super_users=principals,
            allow_everyone_if_no_acl_found=allow_everyone_if_no_acl_found,
            **options,
        )
    if kind == "apache-kafka":
        from onceflow.testing.broker.apache_kafka import STANDARD_AUTHORIZER

        settings = {
            "authorizer.class.name": STANDARD_AUTHORIZER,
            "super.users": ";".join(principals),
            "allow.everyone.if.no.acl.found": allow_everyone_if_no_acl_found,
        }
        return apache_kafka_factory(data_dir, sasl_users=dict(users), settings=settings)
    raise ValueError(f"unknown broker kind {kind!r}; known: {KINDS}")
