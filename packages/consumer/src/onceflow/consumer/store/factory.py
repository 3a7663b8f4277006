"""Open the configured results store."""

from __future__ import annotations

from onceflow.consumer.settings import StoreSettings
from onceflow.consumer.store.base import ResultsStore
from onceflow.consumer.store.postgres import PostgresResultsStore
from onceflow.consumer.store.sqlite import SqliteResultsStore


def open_store(settings: StoreSettings, *, create_schema: bool = True) -> ResultsStore:
    """A connected store of ``settings.backend``, with its tables created unless ``create_schema`` is false."""
    store: ResultsStore
    if settings.backend == "postgres":
        store = PostgresResultsStore(settings.dsn, connect_timeout_s=settings.connect_timeout_s)
    else:
        store = SqliteResultsStore(settings.path, busy_timeout_ms=settings.busy_timeout_ms)
    if create_schema:
        store.create_schema()
    return store
