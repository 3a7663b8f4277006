"""The IP-count job: decode, watermark, count per window and ip; its settings and dead letters."""

from onceflow.spark.job.decode import access_event_decoder, decode_batch
from onceflow.spark.job.ip_count import ip_count_query, ip_counts, source_frame
from onceflow.spark.job.settings import SparkJobSettings

__all__ = ["SparkJobSettings", "access_event_decoder", "decode_batch", "ip_count_query", "ip_counts", "source_frame"]
