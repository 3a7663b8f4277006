"""WorkerSourceTask: at-least-once delivery with an idempotent producer.

Offsets are committed every ``offset.flush.interval.ms``: flush the producer (every record so far is
acknowledged), then write the offsets to the offset store. A crash in between re-sends the records
after the last committed offsets: duplicates are possible, loss is not.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Producer

from onceflow.core.logging import get_logger
from onceflow.runtime.worker.source_task import AbstractWorkerSourceTask

_log = get_logger(__name__)


class WorkerSourceTask(AbstractWorkerSourceTask):
    #: Offset commit interval (Kafka Connect's ``offset.flush.interval.ms``).
    flush_interval_s = 5.0

    def create_producer(self) -> Producer:
        config: dict[str, Any] = {"enable.idempotence": True, **self.producer_config}
        config.pop("transactional.id", None)
        self._last_commit = time.monotonic()
        return Producer(config)

    def begin_send_iteration(self) -> None:
        if time.monotonic() - self._last_commit >= self.flush_interval_s:
            self.commit_offsets()

    def commit_offsets(self) -> None:
        """Steps: 1. flush the producer; 2. write the pending offsets; 3. tell the task."""
        assert self.producer is not None
        self._last_commit = time.monotonic()
        if not self.pending_offsets:
            return
        # Step 1
        if self.producer.flush(60) > 0:
            raise TimeoutError("records were not acknowledged within 60 s; offsets not committed")
        # Step 2
        offsets = list(self.pending_offsets.values())
        self.pending_offsets.clear()
        self.offset_store.write(self.id.connector, offsets)
        # Step 3
        self.task.commit()
