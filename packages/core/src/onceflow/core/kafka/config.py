"""The librdkafka configurations of onceflow's client roles, built on one base configuration.

The base is what :meth:`onceflow.core.settings.KafkaSettings.client_config` returns (bootstrap
servers and the passthrough ``properties``: security and the like), or a copy of it that a component
holds. Each role adds only its own settings, and ``overrides`` come last:

- :func:`with_fetch_defaults`: a stream consumer's base with :data:`FETCH_DEFAULTS` under it (the base wins);
- :func:`reader_config`: a consumer that assigns partitions itself and commits nothing (a fresh
  ``group.id`` under ``group_prefix``, which the ACLs grant; partition EOF reported);
- :func:`idempotent_producer_config`: ``enable.idempotence`` (no duplicates on a retry; acks=all);
- :func:`transactional_producer_config`: an idempotent producer with a ``transactional.id``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Literal

IsolationLevel = Literal["read_committed", "read_uncommitted"]

#: The fetch settings of a consumer that reads a stream, under its base configuration.
#:
#: librdkafka (2.4 on) postpones a partition's next fetch by ``fetch.queue.backoff.ms``, 1000 ms by
#: default, whenever its local queue holds ``queued.min.messages`` (100,000) or more. A consumer that
#: drains the queue faster than that (a Spark task reading a backlog at 1M records/s) then gets
#: nothing for up to a second per 100,000 records: a 250,000-record range took 1.3 s instead of 0.2 s
#: (docs/benchmarks.md, "The source's reads wait on librdkafka's fetch backoff"). Apache Kafka's Java
#: consumer has no such pause. The thresholds still bound the queue (its memory): only the check
#: whether it has room again comes sooner.
FETCH_DEFAULTS: Mapping[str, Any] = {"fetch.queue.backoff.ms": 10}


def with_fetch_defaults(base: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` for a consumer that reads a stream: :data:`FETCH_DEFAULTS` where ``base`` says nothing."""
    return {**FETCH_DEFAULTS, **base}


def reader_config(
    base: Mapping[str, Any], *, group_prefix: str, isolation_level: IsolationLevel, **overrides: object
) -> dict[str, Any]:
    """A consumer of partitions it assigns itself, committing nothing, under a group id of its own."""
    return {
        **with_fetch_defaults(base),
        "group.id": f"{group_prefix}{uuid.uuid4().hex}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "isolation.level": isolation_level,
        "enable.partition.eof": True,
        **overrides,
    }


def idempotent_producer_config(base: Mapping[str, Any], **overrides: object) -> dict[str, Any]:
    """A producer whose retries never duplicate or reorder a record (``enable.idempotence``)."""
    return {**base, "enable.idempotence": True, **overrides}


def transactional_producer_config(
    base: Mapping[str, Any], transactional_id: str, **overrides: object
) -> dict[str, Any]:
    """An idempotent producer with ``transactional_id``: ``init_transactions`` fences its older instances."""
    return {**base, **overrides, "transactional.id": transactional_id, "enable.idempotence": True}
