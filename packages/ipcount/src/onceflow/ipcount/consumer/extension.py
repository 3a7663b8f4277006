"""``IpCountExtension``: what the IP-count example adds to every consumer (registered in the
``onceflow.consumer.extensions`` entry-point group)."""

from __future__ import annotations

from collections.abc import Sequence

from onceflow.consumer.api import ResultsApi, ResultsServicer
from onceflow.consumer.extension import ConsumerExtension
from onceflow.consumer.settings import ConsumerSettings
from onceflow.consumer.tables import StoredTable
from onceflow.ipcount.consumer.servicer import IpCountServicer
from onceflow.ipcount.consumer.tables import ip_count_table


class IpCountExtension(ConsumerExtension):
    """Stores ``consumer.topic`` (unless empty) into ``results``; serves GetIpCounts, GetTopIps and
    WatchResults over its views, and RunAudit (its servicer stops running audits on close)."""

    def stored_tables(self, settings: ConsumerSettings) -> Sequence[StoredTable]:
        loop = settings.consumer
        return [ip_count_table(loop.topic, skip_undecodable=loop.skip_undecodable)] if loop.topic else []

    def results_servicer(self, api: ResultsApi) -> ResultsServicer:
        return IpCountServicer(api)
