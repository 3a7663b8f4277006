"""Why a coordinator refuses to serve on its decision log: every refusal says what is wrong and how to recover.

A coordinator that serves on a log that lost decisions would presume abort over them: committed
batches would read ABORTED while the sinks hold their rows. So it fails closed: each of these is a
:class:`~onceflow.coordinator.exceptions.TransactionLogError` raised when the log is opened (or,
for :class:`LogTopicLost`, at the next write), and nothing re-creates the log on its own.
"""

from __future__ import annotations

from typing import Final

from onceflow.coordinator.exceptions import TransactionLogError

#: How to rebuild lost decisions (docs/cluster.md, "A lost decision log").
REBUILD_HINT: Final = (
    "stop the Spark jobs, rebuild the decisions from the participants' commit records with "
    "`onceflow txn rebuild --participant HOST:PORT ...` (into a missing or empty log topic), then start the "
    'coordinators (docs/cluster.md, "A lost decision log")'
)
#: What an operator does about a log topic that is missing or empty.
RECOVERY_HINT: Final = (
    "If this is the first start of onceflow on this Kafka cluster, initialise the log once with "
    f"`onceflow txn init-log`. Otherwise its decisions are lost: {REBUILD_HINT}"
)


class LogRefused(TransactionLogError):  # noqa: N818 - reads as a state
    """The log is missing, lost decisions or is configured so that it could: the coordinator refuses to serve."""


class LogTopicMissing(LogRefused):
    """The log topic does not exist (never created, or deleted)."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        super().__init__(
            f"decision log topic {topic} does not exist; the coordinator never creates it. {RECOVERY_HINT}"
        )


class LogNotInitialised(LogRefused):
    """The log topic exists but holds no genesis record: a first start, or a topic re-created empty."""

    def __init__(self, topic: str, detail: str) -> None:
        self.topic = topic
        super().__init__(f"decision log topic {topic} {detail}. {RECOVERY_HINT}")


class LogTruncated(LogRefused):
    """Records of the log are gone: its head was deleted, or its tail is behind what the sinks committed."""

    def __init__(self, topic: str, detail: str) -> None:
        self.topic = topic
        super().__init__(
            f"decision log {topic} lost records: {detail}. Delete the damaged topic "
            f"(kafka-topics.sh --delete --topic {topic}), then {REBUILD_HINT}"
        )


class LogTopicMisconfigured(LogRefused):
    """The log topic exists with a setting that would let the broker delete or lose decisions."""

    def __init__(self, topic: str, setting: str, value: str, reason: str) -> None:
        self.topic = topic
        self.setting = setting
        super().__init__(f"log topic {topic} has {setting}={value}: {reason}")


class LogTopicLost(TransactionLogError):  # noqa: N818 - reads as a state
    """The log topic was deleted, or deleted and re-created, under a running coordinator."""
