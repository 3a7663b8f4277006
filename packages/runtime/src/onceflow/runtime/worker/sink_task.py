"""WorkerSinkTask: consume the connector's topics (read_committed) and hand batches to a SinkTask.

Offsets go to the consumer group ``connect-<connector>`` after ``SinkTask.flush`` returns, so
delivery is at least once; the group spreads the topics' partitions over the connector's tasks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException

from onceflow.core.kafka import with_fetch_defaults
from onceflow.runtime.api.sink import SinkRecord, SinkTask
from onceflow.runtime.config.connector_config import TOPICS
from onceflow.runtime.worker.task import TaskSetup, WorkerTask


class WorkerSinkTask(WorkerTask):
    batch_size = 500
    poll_timeout_s = 0.2

    def __init__(self, setup: TaskSetup[SinkTask], *, consumer_config: Mapping[str, Any]) -> None:
        super().__init__(setup.task_id, setup.worker_id, setup.listener, setup.target)
        self.task = setup.task
        self.task_config = dict(setup.task_config)
        self.topics = setup.connector_config.get_list(TOPICS)
        self.consumer_config = {
            **with_fetch_defaults(consumer_config),
            "group.id": f"connect-{setup.task_id.connector}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
        self.consumer: Consumer | None = None

    def initialize(self) -> None:
        self.consumer = Consumer(self.consumer_config)
        self.consumer.subscribe(self.topics)
        self.task.start(self.task_config)

    def execute(self) -> None:
        assert self.consumer is not None
        batch = []
        for msg in self.consumer.consume(self.batch_size, timeout=self.poll_timeout_s):
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(error)
            topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
            assert topic is not None and partition is not None and offset is not None
            headers: list[tuple[str, bytes]] = []
            for header in msg.headers() or []:
                name, value = header[0], header[1]
                headers.append((name, value.encode() if isinstance(value, str) else (value or b"")))
            batch.append(SinkRecord(topic, partition, offset, msg.key(), msg.value(), msg.timestamp()[1], headers))
        if batch:
            self.task.put(batch)
            self.task.flush()
            self.consumer.commit(asynchronous=False)

    def on_stop_requested(self) -> None:
        self.task.stop()

    def close(self, failed: bool) -> None:
        if self.consumer is not None:
            self.consumer.close()
