"""The IP-count example in the results consumer (``onceflow consumer``), added through the consumer's
``onceflow.consumer.extensions`` entry point: its stored table ``results``, the views over it and
its own gRPC service on the consumer's server, ``onceflow.v1.IpCounts`` (GetIpCounts, GetTopIps,
WatchResults over the views, and RunAudit: its audit, :mod:`onceflow.ipcount.audit`)."""

from onceflow.ipcount.consumer.extension import IpCountExtension
from onceflow.ipcount.consumer.tables import STORE_TABLE, ip_count_table

__all__ = ["STORE_TABLE", "IpCountExtension", "ip_count_table"]
