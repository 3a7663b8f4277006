"""The identity and progress of an idempotent/transactional producer, from librdkafka statistics.

With ``statistics.interval.ms`` set, librdkafka hands the application a JSON document every interval
(through ``stats_cb``, served by ``poll``/``flush``). Its ``eos`` section has the producer id and
epoch, the idempotence and transaction states; ``topics.<t>.partitions.<p>.txmsgs`` counts the
messages sent per partition, which is how far each partition's sequence numbers have advanced.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ProducerStats:
    producer_id: int = -1
    producer_epoch: int = -1
    idempotence_state: str = ""
    transaction_state: str = ""
    #: Messages sent per ``topic-partition`` (the sequence progress of each partition).
    partition_messages: dict[str, int] = field(default_factory=dict)

    @classmethod
    def parse(cls, stats_json: str) -> ProducerStats:
        """Pick the exactly-once fields out of one librdkafka statistics document."""
        doc: dict[str, Any] = json.loads(stats_json)
        eos = doc.get("eos", {})
        messages = {}
        for topic, topic_doc in doc.get("topics", {}).items():
            for partition, partition_doc in topic_doc.get("partitions", {}).items():
                if partition != "-1" and partition_doc.get("txmsgs", 0):
                    messages[f"{topic}-{partition}"] = int(partition_doc["txmsgs"])
        return cls(
            producer_id=int(eos.get("producer_id", -1)),
            producer_epoch=int(eos.get("producer_epoch", -1)),
            idempotence_state=str(eos.get("idemp_state", "")),
            transaction_state=str(eos.get("txn_state", "")),
            partition_messages=messages,
        )
