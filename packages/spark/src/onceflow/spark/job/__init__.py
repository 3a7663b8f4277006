"""The building blocks of jobs: settings, the source, AccessEvent decoding, dead letters, end of input."""

from onceflow.spark.job.decode import access_event_decoder, decode_batch
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.job.source import source_frame

__all__ = ["SparkJobSettings", "access_event_decoder", "decode_batch", "source_frame"]
