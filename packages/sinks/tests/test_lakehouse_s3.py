"""Delta Lake and Iceberg tables on an S3 API store (S3Proxy), with the store killed between prepare and commit."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from onceflow.contract import TransactionId
from onceflow.contract.staging.settings import S3Settings
from onceflow.sinks.delta.settings import DeltaOptions
from onceflow.sinks.iceberg.settings import IcebergCatalogSettings, IcebergOptions
from onceflow.sinks.lakehouse.exceptions import TableStoreUnavailable
from onceflow.sinks.lakehouse.open import open_participant
from onceflow.testing.s3.fixtures import S3ProxyFactory

from .conftest import W0, Stage, bound, row
from .lakehouse import KINDS


@pytest.mark.parametrize("kind", KINDS)
def test_a_store_killed_between_prepare_and_commit_loses_nothing(
    tmp_path: Path, stage: Stage, s3proxy_factory: S3ProxyFactory, kind: str
) -> None:
    """Steps:
    1. Batch 0 commits to a table on S3 (upsert); batch 1 is prepared: its data files are on S3,
       outside the table, and journaled.
    2. ``kill -9`` the store. The Commit of batch 1 fails (UNAVAILABLE for the coordinator) within a
       few timeouts, not minutes; a prepare of another job votes no naming the store; batch 1 stays
       prepared.
    3. The store comes back on the same data: the re-sent Commit lands batch 1 once, and a replay
       of it is acknowledged.
    """
    store = s3proxy_factory()
    s3 = S3Settings.model_validate(store.s3_settings())
    state = str(tmp_path / "state")
    options: DeltaOptions | IcebergOptions
    if kind == "delta":
        options = DeltaOptions(root=store.uri(f"{kind}/lake"), state_dir=state, s3=s3)
    else:
        catalog = IcebergCatalogSettings(sqlite=str(tmp_path / "catalog.db"))
        options = IcebergOptions(warehouse=store.uri(f"{kind}/warehouse"), state_dir=state, s3=s3, catalog=catalog)
    sink = open_participant("lake", options)
    try:
        # Step 1
        assert sink.prepare(
            TransactionId("job", 0), stage("job", 0, [row("a", 1), row("b", 1)]), bound(sink)
        ).vote_commit
        sink.commit(TransactionId("job", 0))
        batch1 = stage("job", 1, [row("a", 5)])
        assert sink.prepare(TransactionId("job", 1), batch1, bound(sink)).vote_commit
        # Step 2
        store.kill()
        started = time.monotonic()
        with pytest.raises(TableStoreUnavailable) as failed:
            sink.commit(TransactionId("job", 1))
        assert time.monotonic() - started < 90, "a dead store must fail the commit in seconds"
        assert store.secret_access_key not in str(failed.value)
        vote = sink.prepare(TransactionId("other", 0), stage("other", 0, [row("c", 1)]), bound(sink))
        assert not vote.vote_commit and "cannot prepare other:0" in vote.reason
        assert sink.list_prepared() == [TransactionId("job", 1)]
        # Step 3
        store.start()
        sink.commit(TransactionId("job", 1))
        sink.commit(TransactionId("job", 1), batch1, bound(sink))
        held = sink.format.read("ip_counts")
        assert held is not None
        assert sorted((r["window_start"], r["ip"], r["count"]) for r in held.to_pylist()) == [
            (W0, "a", 5),
            (W0, "b", 1),
        ]
        assert sink.list_prepared() == []
        assert [txn for _, txn in sink.format.history("ip_counts") if txn] == ["job:0", "job:1"]
    finally:
        sink.close()
