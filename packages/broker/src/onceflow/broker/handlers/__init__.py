"""Request handlers, one module per API area, and the dispatch table by API key.

Every handler is ``async def handle(ctx: RequestContext, request) -> response | None`` and is
registered here for exactly the API keys advertised in :mod:`onceflow.broker.protocol.versions`.
"""

from __future__ import annotations

from onceflow.broker.handlers import (
    acls,
    alter_configs,
    api_versions,
    create_partitions,
    delete_records,
    describe_configs,
    fetch,
    find_coordinator,
    group_deletion,
    group_listing,
    group_membership,
    group_offsets,
    list_offsets,
    metadata,
    produce,
    producer_ids,
    sasl,
    topics_admin,
    transactions,
    transactions_admin,
    write_txn_markers,
)
from onceflow.broker.handlers.context import Handler, RequestContext
from onceflow.broker.protocol import versions

HANDLERS: dict[int, Handler] = {
    versions.PRODUCE: produce.handle,
    versions.FETCH: fetch.handle,
    versions.LIST_OFFSETS: list_offsets.handle,
    versions.METADATA: metadata.handle,
    versions.FIND_COORDINATOR: find_coordinator.handle,
    versions.API_VERSIONS: api_versions.handle,
    versions.SASL_HANDSHAKE: sasl.handle_handshake,
    versions.SASL_AUTHENTICATE: sasl.handle_authenticate,
    versions.CREATE_TOPICS: topics_admin.handle_create,
    versions.DELETE_TOPICS: topics_admin.handle_delete,
    versions.CREATE_PARTITIONS: create_partitions.handle,
    versions.INIT_PRODUCER_ID: producer_ids.handle,
    versions.ADD_PARTITIONS_TO_TXN: transactions.handle_add_partitions,
    versions.ADD_OFFSETS_TO_TXN: transactions.handle_add_offsets,
    versions.END_TXN: transactions.handle_end_txn,
    versions.TXN_OFFSET_COMMIT: transactions.handle_txn_offset_commit,
    versions.DESCRIBE_PRODUCERS: transactions_admin.handle_describe_producers,
    versions.LIST_TRANSACTIONS: transactions_admin.handle_list_transactions,
    versions.DESCRIBE_TRANSACTIONS: transactions_admin.handle_describe_transactions,
    versions.WRITE_TXN_MARKERS: write_txn_markers.handle,
    versions.DESCRIBE_ACLS: acls.handle_describe,
    versions.CREATE_ACLS: acls.handle_create,
    versions.DELETE_ACLS: acls.handle_delete,
    versions.DESCRIBE_CONFIGS: describe_configs.handle,
    versions.ALTER_CONFIGS: alter_configs.handle_alter,
    versions.INCREMENTAL_ALTER_CONFIGS: alter_configs.handle_incremental,
    versions.JOIN_GROUP: group_membership.handle_join,
    versions.SYNC_GROUP: group_membership.handle_sync,
    versions.HEARTBEAT: group_membership.handle_heartbeat,
    versions.LEAVE_GROUP: group_membership.handle_leave,
    versions.OFFSET_COMMIT: group_offsets.handle_commit,
    versions.OFFSET_FETCH: group_offsets.handle_fetch,
    versions.LIST_GROUPS: group_listing.handle_list,
    versions.DESCRIBE_GROUPS: group_listing.handle_describe,
    versions.DELETE_GROUPS: group_deletion.handle,
    versions.DELETE_RECORDS: delete_records.handle,
}

__all__ = ["HANDLERS", "Handler", "RequestContext"]
