"""ListTransactions and DescribeTransactions over the coordinator's current state."""

from __future__ import annotations

from collections.abc import Sequence

from kio.schema.errors import ErrorCode

from onceflow.broker.transactions.results import TransactionDescription, TransactionListing
from onceflow.broker.transactions.store import TransactionStore


def list_transactions(
    store: TransactionStore,
    now_ms: int,
    state_filters: Sequence[str] = (),
    producer_id_filters: Sequence[int] = (),
    duration_filter_ms: int = -1,
) -> list[TransactionListing]:
    """Every known transactional id that passes all filters, sorted by id.

    * ``state_filters``: state names as Kafka reports them ("Ongoing", ...), case-insensitive; empty
      keeps every state.
    * ``producer_id_filters``: empty keeps every producer.
    * ``duration_filter_ms`` (KIP-994): if >= 0, only transactions that started more than this long
      ago (ids that never started a transaction are left out); -1 keeps all.
    """
    states = {name.casefold() for name in state_filters}
    producers = set(producer_id_filters)
    listings = []
    for metadata in store:
        if states and metadata.state.value.casefold() not in states:
            continue
        if producers and metadata.producer_id not in producers:
            continue
        if duration_filter_ms >= 0 and (
            metadata.start_time_ms < 0 or now_ms - metadata.start_time_ms <= duration_filter_ms
        ):
            continue
        listings.append(TransactionListing(metadata.transactional_id, metadata.producer_id, metadata.state.value))
    return sorted(listings, key=lambda listing: listing.transactional_id)


def describe(store: TransactionStore, transactional_id: str) -> TransactionDescription:
    """The state of one transactional id: INVALID_REQUEST for "", TRANSACTIONAL_ID_NOT_FOUND if unknown."""
    if not transactional_id:
        return TransactionDescription(ErrorCode.invalid_request, transactional_id)
    metadata = store.get(transactional_id)
    if metadata is None:
        return TransactionDescription(ErrorCode.transactional_id_not_found, transactional_id)
    return TransactionDescription(
        error=ErrorCode.none,
        transactional_id=transactional_id,
        state=metadata.state.value,
        timeout_ms=metadata.timeout_ms,
        start_time_ms=metadata.start_time_ms,
        producer_id=metadata.producer_id,
        producer_epoch=metadata.producer_epoch,
        topics=metadata.topics(),
        groups=sorted(metadata.groups),
    )
