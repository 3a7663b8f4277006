"""Read a whole topic with read_committed: :mod:`onceflow.core.kafka` (imported here for the audit)."""

from onceflow.core.kafka import TopicNotFound, TopicRecord, read_committed

__all__ = ["TopicNotFound", "TopicRecord", "read_committed"]
