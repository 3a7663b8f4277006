"""Create onceflow's Kafka topics unless they exist: the Helm chart's topic Job runs this file.

Assumptions: it runs in an onceflow image (Python with confluent-kafka) and reads its input from
environment variables, all of them set by templates/topics-job.yaml from values.yaml:

    KAFKA_BOOTSTRAP_SERVERS  host:port[,host:port...]
    KAFKA_PROPERTIES         librdkafka properties as one JSON object ({} for none), as every service
    KAFKA_PROPERTIES_FILE    optional: a file of more of them (name=value lines: a mounted login)
    MIN_BROKERS              optional: wait (up to 5 minutes) until the cluster has this many brokers
    REPLICATION_FACTOR       replication factor of each topic it creates
    TOPICS                   JSON {"<topic>": {"partitions": N, "config": {"<name>": "<value>"}}}

A topic that exists already is left as it is. Exit code 0 when every topic exists afterwards, 1 when
one could not be created, 2 when the input is malformed.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

TIMEOUT_S = 60.0
BROKERS_WAIT_S = 300.0


def topic_specs(topics: Mapping[str, Any], replication_factor: int) -> list[NewTopic]:
    """One NewTopic per entry of ``topics`` (partitions and configs as given; values become strings)."""
    specs = []
    for name, spec in sorted(topics.items()):
        partitions = int(spec.get("partitions", 1))
        config = {str(key): str(value) for key, value in (spec.get("config") or {}).items()}
        specs.append(NewTopic(name, num_partitions=partitions, replication_factor=replication_factor, config=config))
    return specs


def create_missing(admin: AdminClient, specs: list[NewTopic]) -> tuple[list[str], list[str]]:
    """Create the topics of ``specs`` that do not exist yet; returns (created, failed with reasons)."""
    existing = set(admin.list_topics(timeout=TIMEOUT_S).topics)
    wanted = [spec for spec in specs if spec.topic not in existing]
    for spec in specs:
        if spec.topic in existing:
            print(f"topics: {spec.topic} exists, left as it is", flush=True)
    created: list[str] = []
    failed: list[str] = []
    if not wanted:
        return created, failed
    for name, future in admin.create_topics(wanted, operation_timeout=TIMEOUT_S).items():
        try:
            future.result(timeout=TIMEOUT_S)
            created.append(name)
            print(f"topics: created {name}", flush=True)
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                print(f"topics: {name} exists, left as it is", flush=True)
                continue
            failed.append(f"{name}: {exc.args[0].str()}")
    return created, failed


def read_properties(path: str) -> dict[str, str]:
    """The name=value lines of a librdkafka properties file (# comments)."""
    properties = {}
    with open(path) as file:
        for line in file:
            name, sep, value = line.strip().partition("=")
            if sep and name.strip() and not name.startswith("#"):
                properties[name.strip()] = value.strip()
    return properties


def wait_for_brokers(admin: AdminClient, wanted: int) -> bool:
    """True once the cluster's metadata lists ``wanted`` brokers (every replica can be placed)."""
    deadline = time.monotonic() + BROKERS_WAIT_S
    while True:
        try:
            brokers = len(admin.list_topics(timeout=10).brokers)
        except KafkaException as exc:
            brokers, reason = 0, exc.args[0].str()
        else:
            reason = f"{brokers} of {wanted} brokers up"
        if brokers >= wanted:
            return True
        if time.monotonic() > deadline:
            print(f"topics: the cluster did not reach {wanted} brokers ({reason})", file=sys.stderr)
            return False
        print(f"topics: waiting for {wanted} brokers ({reason})", flush=True)
        time.sleep(2)


def main(environ: Mapping[str, str] = os.environ) -> int:
    try:
        bootstrap = environ["KAFKA_BOOTSTRAP_SERVERS"]
        properties = json.loads(environ.get("KAFKA_PROPERTIES") or "{}")
        replication_factor = int(environ.get("REPLICATION_FACTOR", "1"))
        min_brokers = int(environ.get("MIN_BROKERS", "0"))
        topics = json.loads(environ["TOPICS"])
        if environ.get("KAFKA_PROPERTIES_FILE") and isinstance(properties, dict):
            properties.update(read_properties(environ["KAFKA_PROPERTIES_FILE"]))
    except (KeyError, ValueError, OSError) as exc:
        print(f"topics: bad input: {exc!r}", file=sys.stderr)
        return 2
    if not isinstance(properties, dict) or not isinstance(topics, dict):
        print("topics: KAFKA_PROPERTIES and TOPICS must be JSON objects", file=sys.stderr)
        return 2
    admin = AdminClient({**{str(k): str(v) for k, v in properties.items()}, "bootstrap.servers": bootstrap})
    if min_brokers and not wait_for_brokers(admin, min_brokers):
        return 1
    _, failed = create_missing(admin, topic_specs(topics, replication_factor))
    for reason in failed:
        print(f"topics: cannot create {reason}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
