"""A lost decision log, rebuilt from the participants' commit records (``onceflow txn rebuild``, issue 22).

The attacks on the log (deleted, truncated, unsafe) are refused in tests/security/test_decision_log.py;
this is the way back: nothing committed reads ABORTED, and the pipeline goes on.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import grpc
import pytest
from confluent_kafka.admin import AdminClient

from onceflow.broker.embedded import BrokerProcess
from onceflow.core.service import EXIT_CONFIG
from onceflow.core.toml_writer import to_toml
from onceflow.core.topics import COORDINATOR_LOG_TOPIC
from onceflow.testing.coordinator import log_topic_exists
from onceflow.testing.coordinator.cluster import SINKS, TwoPhaseCommitCluster, wait_for_log
from onceflow.testing.faults import CRASH_EXIT_CODE
from onceflow.testing.faults.coordinator import CRASH_ENV

from .driver import COMMITTED, COMMITTING, JOB, batch_rows, expected_rows

pytestmark = pytest.mark.slow

ONCEFLOW: Final = Path(sys.executable).parent / "onceflow"


def _onceflow(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ONCEFLOW), *args], capture_output=True, text=True, timeout=120)


def _admin_config(path: Path, broker: BrokerProcess) -> Path:
    """The coordinator's config as the operator's commands read it (the log is never created at start)."""
    settings: dict[str, Any] = {
        "kafka": {"bootstrap_servers": broker.bootstrap_servers},
        "transaction_log": {"init_if_missing": False, "timeout_ms": 10_000},
    }
    path.write_text(to_toml(settings))
    return path


def test_a_deleted_log_is_rebuilt_from_the_commit_records_and_the_pipeline_goes_on(
    kafka_broker: BrokerProcess, postgres_dsn: str, tmp_path: Path
) -> None:
    """Steps:
    1. ``onceflow txn init-log``, then a coordinator (never initialising its log itself) and the
       Kafka, SQLite and PostgreSQL participants.
    2. Batches 0 and 1 commit.
    3. Batch 2 is decided COMMIT; Kafka and PostgreSQL apply it, SQLite is down and still holds
       it prepared.
    4. The coordinator is killed (-9) and its log topic deleted.
    5. The coordinator refuses to start: the log does not exist. It does not re-create it.
    6. SQLite's participant restarts: it waits for the coordinator to resolve batch 2, and answers
       the read-only RPCs meanwhile.
    7. ``onceflow txn rebuild`` asks every participant what it committed and holds: batches 0 and
       1 COMMITTED, batch 2 COMMITTING (SQLite has not applied it).
    8. The coordinator starts on the rebuilt log and delivers batch 2 to SQLite. No committed
       batch reads ABORTED.
    9. The writer from before the loss is fenced; a new one registers and commits batch 3: every
       sink holds batches 0 to 3 exactly once.
    """
    admin_config = _admin_config(tmp_path / "admin.toml", kafka_broker)
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    fast = {"commit_wait_ms": 1_000, "commit_retry": {"call_timeout_ms": 500, "max_backoff_ms": 300}}
    cluster = TwoPhaseCommitCluster(
        tmp_path / "cluster",
        bootstrap_servers=kafka_broker.bootstrap_servers,
        postgres_dsn=postgres_dsn,
        coordinator_settings={**fast, "transaction_log": {"init_if_missing": False}},
    )
    coordinator = cluster.coordinator
    try:
        # Step 1
        initialised = _onceflow("txn", "init-log", "--config", str(admin_config))
        assert initialised.returncode == 0, initialised.stderr
        cluster.start()
        sqlite = cluster.participants["sqlite"]
        # Step 2
        epoch = cluster.register(JOB)
        for batch in (0, 1):
            assert cluster.commit(JOB, epoch, batch, cluster.stage(JOB, batch, batch_rows(batch))).state == COMMITTED
        # Step 3
        coordinator.stop()
        coordinator.env[CRASH_ENV] = "commit-logged"
        coordinator.start()
        files = cluster.stage(JOB, 2, batch_rows(2))
        with pytest.raises(grpc.RpcError):
            cluster.commit(JOB, epoch, 2, files)
        assert coordinator.wait(10) == CRASH_EXIT_CODE
        del coordinator.env[CRASH_ENV]
        sqlite.stop()
        coordinator.start()
        assert cluster.commit(JOB, epoch, 2, files).state == COMMITTING
        assert cluster.postgres_rows() == cluster.kafka_rows() == expected_rows([batch_rows(b) for b in (0, 1, 2)])
        # Step 4
        coordinator.kill()
        admin.delete_topics([COORDINATOR_LOG_TOPIC])[COORDINATOR_LOG_TOPIC].result(20)
        # Step 5
        coordinator.start(wait=False)
        assert coordinator.wait(60) == EXIT_CONFIG, coordinator.log_tail()
        assert f"decision log topic {COORDINATOR_LOG_TOPIC} does not exist" in coordinator.log_tail(40)
        assert not log_topic_exists(kafka_broker.bootstrap_servers)
        # Step 6
        sqlite.start(wait=False)
        wait_for_log(sqlite, "recover.coordinator_unreachable", timeout=30)
        # Step 7
        targets = [arg for process in cluster.participants.values() for arg in ("--participant", process.target)]
        rebuilt = _onceflow("txn", "rebuild", "--config", str(admin_config), *targets, "--yes")
        assert rebuilt.returncode == 0, rebuilt.stderr
        assert f"job {JOB}: last committed batch 2" in rebuilt.stdout, rebuilt.stdout
        assert f"committed: 2 ({JOB}:0, {JOB}:1)" in rebuilt.stdout, rebuilt.stdout
        assert f"committing (Commit is re-sent): 1 ({JOB}:2)" in rebuilt.stdout, rebuilt.stdout
        assert "presumed aborted (prepared, committed by no sink): 0" in rebuilt.stdout, rebuilt.stdout
        # Step 8
        coordinator.start()
        sqlite.wait_ready()
        cluster.wait_for_state(JOB, 2, COMMITTED)
        assert [cluster.transaction(JOB, batch).state for batch in (0, 1, 2)] == [COMMITTED] * 3
        # Step 9
        files = cluster.stage(JOB, 3, batch_rows(3))
        with pytest.raises(grpc.RpcError) as fenced:
            cluster.commit(JOB, epoch, 3, files)
        assert fenced.value.code() == grpc.StatusCode.FAILED_PRECONDITION, fenced.value.details()
        new_epoch = cluster.register(JOB)
        assert new_epoch > epoch
        assert cluster.commit(JOB, new_epoch, 3, files).state == COMMITTED
        expected = expected_rows([batch_rows(batch) for batch in range(4)])
        assert cluster.sink_rows() == {sink: expected for sink in SINKS}
        assert all(not held for held in cluster.prepared().values()), cluster.prepared()
    except BaseException:
        sys.stderr.write(f"\n{cluster.logs(80)}\n")
        raise
    finally:
        cluster.stop()
