"""The example's consumer extension: installed through ``onceflow.consumer.extensions``, it stores
``consumer.topic`` into ``results`` and serves ``onceflow.v1.IpCounts`` beside Results (the consumer itself
names no example); a broken extension, or two serving one service name, stop the consumer with an error
naming both."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from onceflow.consumer.api import SERVICE_NAME, ResultsApi, TableQuery
from onceflow.consumer.extension import (
    ENTRY_POINT_GROUP,
    ConsumerExtension,
    ExtensionService,
    extension_services,
    load_extensions,
)
from onceflow.consumer.settings import ConsumerSettings
from onceflow.consumer.store import SqliteResultsStore
from onceflow.consumer.tables import StoredTable, StoredTables
from onceflow.contract import SinkMode
from onceflow.core.errors import InvalidConfig
from onceflow.core.plugins import PluginError
from onceflow.ipcount.consumer import IpCountExtension
from onceflow.ipcount.consumer.servicer import IpCountsServicer
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA
from onceflow.testing.plugins import installed_entry_points


def test_the_installed_extension_stores_the_results_topic_before_the_declared_tables() -> None:
    assert [type(found) for found in load_extensions()] == [IpCountExtension]
    settings = ConsumerSettings.model_validate(
        {"consumer": {"topic": "counts"}, "tables": [{"topic": "errors", "table": "server_errors"}]}
    )
    tables = StoredTables.from_settings(settings)
    assert [(t.topic, t.table) for t in tables] == [("counts", "results"), ("errors", "server_errors")]
    results = tables.by_table("results")
    assert results is not None and results.mode is SinkMode.UPSERT and results.keys == ("window_start", "ip")
    assert results.schema == IP_COUNT_ARROW_SCHEMA and not results.avro_logical_types


def test_an_empty_results_topic_stores_only_the_declared_tables() -> None:
    settings = ConsumerSettings.model_validate(
        {"consumer": {"topic": ""}, "tables": [{"topic": "errors", "table": "server_errors"}]}
    )
    assert [t.table for t in StoredTables.from_settings(settings)] == ["server_errors"]


@pytest.mark.parametrize(
    ("value", "reason"),
    [("onceflow.nowhere:Extension", "does not load"), ("onceflow.ipcount.consumer:ip_count_table", "is not a")],
)
def test_a_broken_extension_is_refused_by_name(tmp_path: Path, value: str, reason: str) -> None:
    with (
        installed_entry_points(tmp_path, {ENTRY_POINT_GROUP: {"broken": value}}),
        pytest.raises(PluginError, match=f"{ENTRY_POINT_GROUP} entry point 'broken'.*{reason}"),
    ):
        load_extensions()


class TablesOnly(ConsumerExtension):
    """An extension that stores nothing and serves one service of the given name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def stored_tables(self, settings: ConsumerSettings) -> Sequence[StoredTable]:
        return ()

    def services(self, api: ResultsApi) -> Sequence[ExtensionService]:
        return [ExtensionService(self.name, object(), lambda servicer, server: None)]


def test_extensions_add_services_and_one_name_has_one_owner(tmp_path: Path) -> None:
    settings = ConsumerSettings.model_validate({"store": {"path": str(tmp_path / "results.db")}})
    store = SqliteResultsStore(tmp_path / "results.db")
    try:
        store.create_schema()
        api = ResultsApi(settings, store, TableQuery(StoredTables.from_settings(settings), store))
        (ipcounts,) = IpCountExtension().services(api)
        assert ipcounts.name == "onceflow.v1.IpCounts" and type(ipcounts.servicer) is IpCountsServicer
        # two extensions, each with its own service: both are served
        found = extension_services([IpCountExtension(), TablesOnly("acme.v1.Other")], api, reserved=[SERVICE_NAME])
        assert [s.name for s in found] == ["onceflow.v1.IpCounts", "acme.v1.Other"]
        # the same name twice, or the consumer's own: refused, naming both owners
        with pytest.raises(InvalidConfig, match=r"IpCountExtension and .*TablesOnly both serve onceflow.v1.IpCounts"):
            extension_services([IpCountExtension(), TablesOnly("onceflow.v1.IpCounts")], api)
        with pytest.raises(InvalidConfig, match=r"the consumer and .*TablesOnly both serve onceflow.v1.Results"):
            extension_services([TablesOnly(SERVICE_NAME)], api, reserved=[SERVICE_NAME])
    finally:
        store.close()
