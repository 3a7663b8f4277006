"""Open the configured results store."""

from __future__ import annotations

import psycopg
from psycopg.conninfo import conninfo_to_dict

from onceflow.consumer.exceptions import StoreUnreachable
from onceflow.consumer.settings import StoreSettings
from onceflow.consumer.store.base import ResultsStore
from onceflow.consumer.store.postgres import PostgresResultsStore
from onceflow.consumer.store.sqlite import SqliteResultsStore


def open_store(settings: StoreSettings, *, create_schema: bool = True) -> ResultsStore:
    """A connected store of ``settings.backend``, with its tables created unless ``create_schema`` is false."""
    store: ResultsStore
    if settings.backend == "postgres":
        try:
            store = PostgresResultsStore(settings.dsn, connect_timeout_s=settings.connect_timeout_s)
        except psycopg.OperationalError as exc:
            raise StoreUnreachable("store.dsn", _where(settings.dsn), str(exc).strip().splitlines()[0]) from None
    else:
        store = SqliteResultsStore(settings.path, busy_timeout_ms=settings.busy_timeout_ms)
    if create_schema:
        store.create_schema()
    return store


def _where(dsn: str) -> str:
    """The DSN's host, port, database and user (never its password)."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "an unparsable DSN"
    return " ".join(f"{key}={parts[key]}" for key in ("host", "port", "dbname", "user") if key in parts)
