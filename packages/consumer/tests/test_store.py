"""The results store contract, on SQLite and on a real PostgreSQL: atomic batches with offsets,
compare-and-set offsets, last-write-wins upserts, and the queries."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from onceflow.consumer.exceptions import InvalidQuery, StaleOffsets, StoreUnreachable
from onceflow.consumer.settings import StoreSettings
from onceflow.consumer.store import (
    PartitionBatch,
    PostgresResultsStore,
    ResultBatch,
    ResultsStore,
    SqliteResultsStore,
    open_store,
)
from onceflow.ipcount.consumer.query import ResultsQuery
from onceflow.ipcount.consumer.views import IpCountViews, ResultRow, as_table_row

W0 = 1_767_225_600_000
GROUP, TOPIC = "g", "ip_count_sink"


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ResultsStore]:
    instance: ResultsStore
    if request.param == "sqlite":
        instance = SqliteResultsStore(tmp_path / "results.db")
    else:
        instance = PostgresResultsStore(request.getfixturevalue("postgres_dsn"))
    instance.create_schema()
    instance.create_schema()  # idempotent
    IpCountViews(instance)  # the example's table `results` and its index, as its servicer opens them
    IpCountViews(instance)  # idempotent
    yield instance
    instance.close()


def row(window: int, ip: str, count: int) -> ResultRow:
    return ResultRow(W0 + window * 5000, W0 + window * 5000 + 5000, ip, count)


def part(partition: int, expected: int | None, next_offset: int, rows: tuple[ResultRow, ...]) -> PartitionBatch:
    return PartitionBatch(TOPIC, partition, expected, next_offset, tuple(as_table_row(r) for r in rows))


def batch(*parts: PartitionBatch, owner: str = "a") -> ResultBatch:
    return ResultBatch(GROUP, owner, parts)


def test_batches_commit_rows_and_offsets_together(store: ResultsStore) -> None:
    assert store.stored_offsets(GROUP, TOPIC) == {}
    store.apply(batch(part(0, None, 3, (row(0, "a", 1), row(0, "b", 2))), part(1, None, 8, ())))
    offsets = store.stored_offsets(GROUP, TOPIC)
    assert {p: (o.next_offset, o.applied_records, o.owner) for p, o in offsets.items()} == {
        0: (3, 2, "a"),
        1: (8, 0, "a"),
    }
    # A later record for a key replaces the stored one (update mode: last write wins).
    store.apply(batch(part(0, 3, 6, (row(0, "a", 5), row(1, "a", 1), row(0, "a", 7))), owner="b"))
    assert IpCountViews(store).all_results() == [row(0, "a", 7), row(0, "b", 2), row(1, "a", 1)]
    assert store.stored_offsets(GROUP, TOPIC)[0].applied_records == 5
    assert store.stored_offsets(GROUP, TOPIC)[0].owner == "b"
    assert store.stored_offsets("other-group", TOPIC) == {}


def test_a_batch_on_moved_offsets_is_rolled_back_whole(store: ResultsStore) -> None:
    store.apply(batch(part(0, None, 3, (row(0, "a", 1),)), part(1, None, 2, (row(0, "z", 1),))))
    # Partition 1 expects 1 but the store has 2: nothing of the batch is applied, partition 0 included.
    with pytest.raises(StaleOffsets) as caught:
        store.apply(batch(part(0, 3, 4, (row(0, "a", 9),)), part(1, 1, 3, (row(0, "z", 9),))))
    assert (caught.value.partition, caught.value.expected, caught.value.stored) == (1, 1, 2)
    # A second "first" batch for a partition that has offsets already is stale too.
    with pytest.raises(StaleOffsets):
        store.apply(batch(part(0, None, 4, (row(0, "a", 9),))))
    assert IpCountViews(store).all_results() == [row(0, "a", 1), row(0, "z", 1)]
    assert {p: o.next_offset for p, o in store.stored_offsets(GROUP, TOPIC).items()} == {0: 3, 1: 2}


def test_queries(store: ResultsStore) -> None:
    rows = [row(0, "a", 3), row(0, "b", 5), row(0, "c", 5), row(1, "a", 1), row(2, "a", 2), row(3, "d", 1)]
    store.apply(batch(part(0, None, len(rows), tuple(rows))))
    views = IpCountViews(store)
    assert views.counts_for_ip("a", W0, None) == [row(0, "a", 3), row(1, "a", 1), row(2, "a", 2)]
    assert views.counts_for_ip("a", W0 + 5000, W0 + 10_000) == [row(1, "a", 1)]
    assert views.counts_for_ip("nobody", 0, None) == []
    assert views.top_ips(W0, 2) == [row(0, "b", 5), row(0, "c", 5)]  # ties by ip
    assert views.latest_window_start() == W0 + 15_000
    query = ResultsQuery(views, allowed_lateness_ms=5000)
    # Newest window starts at W0+15s; closed: window_end + 5 s <= W0+15s, i.e. the window starting at W0+5s.
    assert query.latest_closed_window() == W0 + 5000
    assert query.top_ips(0, 10) == (W0 + 5000, [row(1, "a", 1)])
    assert query.top_ips(W0, 1) == (W0, [row(0, "b", 5)])
    for bad in [("", 0, 0), ("a", 10, 5), ("a", -1, 0), ("a b", 0, 0)]:
        with pytest.raises(InvalidQuery):
            query.ip_counts(*bad)
    for window, limit in [(0, 0), (0, -1), (0, 10_001), (-5, 10)]:
        with pytest.raises(InvalidQuery):
            query.top_ips(window, limit)


def test_empty_store_queries(store: ResultsStore) -> None:
    query = ResultsQuery(IpCountViews(store))
    assert query.latest_closed_window() is None
    assert query.top_ips(0, 5) == (0, [])


def test_an_unreachable_store_names_the_setting_and_not_the_password() -> None:
    """A deploy with a bad DSN ends with a log line that says which setting to fix (issue 23)."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    dsn = f"host=127.0.0.1 port={port} user=onceflow password=hunter2 dbname=results"
    with pytest.raises(StoreUnreachable) as refused:
        open_store(StoreSettings(backend="postgres", dsn=dsn, connect_timeout_s=2))
    message = str(refused.value)
    assert message.startswith("invalid setting 'store.dsn' (host=127.0.0.1 port=") and "dbname=results" in message
    assert "cannot open the results store" in message and "hunter2" not in message


def test_preload_makes_pyarrows_first_conversion_before_the_first_batch() -> None:
    """pyarrow imports pandas on its first conversion of a Python list; the consumer starts that
    import on a thread at start (the first batch paid about a second). Run in a fresh interpreter:
    this one converted long ago."""
    pytest.importorskip("pandas")  # without pandas pyarrow has nothing to import, and nothing to preload
    script = (
        "import sys\n"
        "from onceflow.consumer.store.sql import preload_conversions\n"
        "assert 'pandas' not in sys.modules, 'imported before the preload'\n"
        "preload_conversions().join(timeout=60)\n"
        "assert 'pandas' in sys.modules, 'the preload converted nothing'\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
