"""The example's consumer extension: installed through ``onceflow.consumer.extensions``, it stores
``consumer.topic`` into ``results`` and serves the IP-count RPCs (the consumer itself names no
example); a broken extension, or two serving the Results RPCs, stop the consumer with an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from onceflow.consumer.api import ResultsApi, TableQuery
from onceflow.consumer.extension import ENTRY_POINT_GROUP, load_extensions, results_servicer
from onceflow.consumer.settings import ConsumerSettings
from onceflow.consumer.store import SqliteResultsStore
from onceflow.consumer.tables import StoredTables
from onceflow.contract import SinkMode
from onceflow.core.errors import InvalidConfig
from onceflow.core.plugins import PluginError
from onceflow.ipcount.consumer import IpCountExtension
from onceflow.ipcount.consumer.servicer import IpCountServicer
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


def test_two_extensions_serving_the_results_rpcs_are_refused(tmp_path: Path) -> None:
    settings = ConsumerSettings.model_validate({"store": {"path": str(tmp_path / "results.db")}})
    store = SqliteResultsStore(tmp_path / "results.db")
    try:
        store.create_schema()
        api = ResultsApi(settings, store, TableQuery(StoredTables.from_settings(settings), store))
        assert type(results_servicer([IpCountExtension()], api)) is IpCountServicer
        with pytest.raises(InvalidConfig, match="each serve the Results RPCs; one may"):
            results_servicer([IpCountExtension(), IpCountExtension()], api)
    finally:
        store.close()
