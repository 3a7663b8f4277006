"""The consumer loop: read_committed, one database transaction per batch, seek to stored offsets."""

from onceflow.consumer.loop.consumer import ResultsConsumer, default_owner
from onceflow.consumer.loop.metrics import ConsumerMetrics
from onceflow.consumer.loop.pending import PendingBatch

__all__ = ["ConsumerMetrics", "PendingBatch", "ResultsConsumer", "default_owner"]
