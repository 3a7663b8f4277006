"""``IpCountExtension``: what the IP-count example adds to every consumer (registered in the
``onceflow.consumer.extensions`` entry-point group)."""

from __future__ import annotations

from collections.abc import Sequence

from onceflow.consumer.api import ResultsApi
from onceflow.consumer.extension import ConsumerExtension, ExtensionService
from onceflow.consumer.settings import ConsumerSettings
from onceflow.consumer.tables import StoredTable
from onceflow.ipcount.consumer.servicer import SERVICE_NAME, IpCountsServicer
from onceflow.ipcount.consumer.tables import ip_count_table
from onceflow.proto.v1 import ipcount_pb2_grpc


class IpCountExtension(ConsumerExtension):
    """Stores ``consumer.topic`` (unless empty) into ``results``; serves ``onceflow.v1.IpCounts``:
    GetIpCounts, GetTopIps and WatchResults over its views, and RunAudit (closing the service stops the
    running audits)."""

    def stored_tables(self, settings: ConsumerSettings) -> Sequence[StoredTable]:
        loop = settings.consumer
        return [ip_count_table(loop.topic, skip_undecodable=loop.skip_undecodable)] if loop.topic else []

    def services(self, api: ResultsApi) -> Sequence[ExtensionService]:
        servicer = IpCountsServicer(api)
        add = ipcount_pb2_grpc.add_IpCountsServicer_to_server
        return [ExtensionService(SERVICE_NAME, servicer, add, close=servicer.close)]
