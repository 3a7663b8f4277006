"""Creating the topics a component needs, when they are missing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic


def ensure_topics(client_config: Mapping[str, Any], topics: Sequence[NewTopic], *, timeout: float = 30.0) -> list[str]:
    """Create every topic of ``topics`` that does not exist yet; return the names created here.

    Steps:
        1. List the cluster's topics (without naming them, which could auto-create them): a user
           allowed to describe but not to create topics can still start on existing ones.
        2. Create the missing ones. One that a concurrent caller created first is left as it is;
           any other failure raises a KafkaException naming the topic.
    """
    admin = AdminClient(dict(client_config))
    # Step 1
    existing = admin.list_topics(timeout=timeout).topics
    missing = [t for t in topics if t.topic not in existing or existing[t.topic].error is not None]
    if not missing:
        return []
    # Step 2
    created: list[str] = []
    for name, future in admin.create_topics(missing, operation_timeout=timeout, request_timeout=timeout).items():
        try:
            future.result(timeout)
            created.append(name)
        except KafkaException as exc:
            error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            if error is not None and error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            code = error.code() if error is not None else KafkaError._FAIL
            raise KafkaException(KafkaError(code, f"cannot create topic {name}: {exc}")) from exc
    return created
