"""The PostgreSQL participant against a real server (``postgres_dsn`` from onceflow.testing.sinks)."""

from __future__ import annotations

import time

import psycopg
import pytest

from onceflow.contract import TransactionId
from onceflow.sinks.base import SinkParticipant
from onceflow.sinks.exceptions import PreparedTransactionsDisabled
from onceflow.sinks.postgres import PostgresParticipant
from onceflow.sinks.postgres.participant import IDLE_CHECK_S
from onceflow.testing.sinks.postgres import running_postgres

from .conftest import W0, Stage, bound, row
from .contract import ParticipantContract, Results


class TestPostgresParticipant(ParticipantContract):
    @pytest.fixture(autouse=True)
    def _database(self, postgres_dsn: str) -> None:
        self.dsn = postgres_dsn

    def open(self, name: str = "db") -> SinkParticipant:
        return PostgresParticipant(name, self.dsn, lock_timeout_ms=500)

    def results(self) -> Results:
        with psycopg.connect(self.dsn) as conn:
            found = conn.execute("SELECT window_start, ip, count FROM ip_counts").fetchall()
        return {(ws, ip): c for ws, ip, c in found}

    def test_prepare_is_a_real_prepared_transaction(self, sink: SinkParticipant, stage: Stage) -> None:
        sink.prepare(TransactionId("ip:count", 12), stage("ipcount", 12, [row("a", 1)]), bound(sink))
        with psycopg.connect(self.dsn) as conn:
            gids = [g for (g,) in conn.execute("SELECT gid FROM pg_prepared_xacts").fetchall()]
        assert gids == ["onceflow:db:ip:count:12"]
        assert sink.list_prepared() == [TransactionId("ip:count", 12)]

    def test_prepare_blocked_by_a_lingering_prepared_transaction_votes_no(
        self, sink: SinkParticipant, stage: Stage
    ) -> None:
        other = self.open("other")
        try:
            assert other.prepare(TransactionId("a", 0), stage("a", 0, [row("x", 1)]), bound(other)).vote_commit
            vote = sink.prepare(TransactionId("b", 0), stage("b", 0, [row("x", 2)]), bound(sink))
            assert not vote.vote_commit
            assert "LockNotAvailable" in vote.reason and "b:0" in vote.reason
            other.commit(TransactionId("a", 0))
            assert sink.prepare(TransactionId("b", 0), stage("b", 0, [row("x", 2)]), bound(sink)).vote_commit
            sink.commit(TransactionId("b", 0))
            assert self.results() == {(W0, "x"): 2}
        finally:
            other.close()

    def test_pooled_connections_the_server_dropped_are_replaced(self, sink: SinkParticipant, stage: Stage) -> None:
        """A pooled connection idle for a while is checked before use: one the server ended is replaced."""
        assert sink.prepare(TransactionId("job", 0), stage("job", 0, [row("a", 1)]), bound(sink)).vote_commit
        with psycopg.connect(self.dsn, autocommit=True) as admin:
            ended = admin.execute(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = 'onceflow-sink-db') AS t"
            ).fetchone()
        assert ended is not None and ended[0] >= 1
        time.sleep(IDLE_CHECK_S + 0.2)
        sink.commit(TransactionId("job", 0))
        assert sink.prepare(TransactionId("job", 1), stage("job", 1, [row("b", 2)]), bound(sink)).vote_commit
        sink.commit(TransactionId("job", 1))
        assert self.results() == {(W0, "a"): 1, (W0, "b"): 2}


def test_max_prepared_transactions_zero_is_refused_naming_the_setting() -> None:
    with running_postgres(max_prepared_transactions="0") as server, pytest.raises(PreparedTransactionsDisabled) as info:
        PostgresParticipant("pg", server.dsn())
    assert info.value.setting == "max_prepared_transactions"
    assert "max_prepared_transactions is 0" in str(info.value)
