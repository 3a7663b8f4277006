"""Pytest fixtures for a real PostgreSQL server (pytest11 plugin of onceflow-sinks).

- ``postgres_server`` (session): ``initdb`` into a fresh directory, start the server with
  ``pg_ctl`` on a free port on 127.0.0.1 with ``max_prepared_transactions = 20`` and ``fsync = on``,
  yield a :class:`PostgresServer`, stop it after the session.
- ``postgres_dsn`` (function): a fresh database on that server; its DSN.

The binaries are found on ``PATH`` or under ``/usr/lib/postgresql/*/bin``. When the tests run
as root, the server runs as the ``postgres`` OS user (``initdb`` refuses root). Without
PostgreSQL the fixtures fail (they never skip): run ``make setup``, which installs it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from onceflow.core.process import free_port
from onceflow.sinks.postgres.server_binaries import find_server_binaries

SERVER_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "unix_socket_directories": "''",
    "max_prepared_transactions": "20",
    "max_connections": "100",
    "fsync": "on",
    "synchronous_commit": "on",
}


@dataclass(frozen=True)
class PostgresServer:
    """A running test server: where it listens and how to reach its ``postgres`` database."""

    host: str
    port: int
    data_dir: Path
    user: str = "postgres"

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host={self.host} port={self.port} user={self.user} dbname={dbname} connect_timeout=10"


def find_postgres_bin() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl``; fails with what to do when there is none."""
    found = find_server_binaries()
    if found is not None:
        return found
    pytest.fail(
        "PostgreSQL server binaries (initdb, pg_ctl) were not found on PATH or under /usr/lib/postgresql/*/bin; "
        "run `make setup` (it installs PostgreSQL) and try again",
        pytrace=False,
    )


def _as_server_user(argv: list[str]) -> list[str]:
    """Run as the ``postgres`` OS user when we are root (PostgreSQL refuses to run as root)."""
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", "postgres", "--", *argv]


def _run(argv: list[str], what: str, log: Path | None = None) -> None:
    result = subprocess.run(_as_server_user(argv), capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        tail = log.read_text(errors="replace")[-4000:] if log is not None and log.exists() else ""
        pytest.fail(f"{what} failed ({result.returncode}): {result.stdout}{result.stderr}\n{tail}", pytrace=False)


@contextmanager
def running_postgres(**settings: str) -> Iterator[PostgresServer]:
    """Run a throwaway PostgreSQL server; ``settings`` override :data:`SERVER_SETTINGS` (postgresql.conf)."""
    bindir = find_postgres_bin()
    # Not under pytest's tmp dir: that one is private to the current user, and the server may run as postgres.
    base = Path(tempfile.mkdtemp(prefix="onceflow-pg-"))
    data_dir = base / "data"
    log = base / "server.log"
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(base, ignore_errors=True)
            pytest.fail(
                "tests run as root, so PostgreSQL must run as the 'postgres' OS user, which does not exist; "
                "run `make setup` (installing the postgresql package creates it)",
                pytrace=False,
            )
        os.chown(base, owner.pw_uid, owner.pw_gid)
    try:
        initdb = [str(bindir / "initdb"), "-D", str(data_dir), "-U", "postgres", "--auth=trust", "-E", "UTF8"]
        _run([*initdb, "--no-sync"], "initdb")
        with (data_dir / "postgresql.conf").open("a") as conf:
            conf.write("\n# onceflow test server\n")
            conf.writelines(f"{key} = {value}\n" for key, value in {**SERVER_SETTINGS, **settings}.items())
        port = free_port()
        pg_ctl = [str(bindir / "pg_ctl"), "-D", str(data_dir), "-w", "-t", "60"]
        _run([*pg_ctl, "-l", str(log), "-o", f"-p {port}", "start"], "pg_ctl start", log)
        try:
            yield PostgresServer(host="127.0.0.1", port=port, data_dir=data_dir)
        finally:
            subprocess.run(_as_server_user([*pg_ctl, "-m", "immediate", "stop"]), capture_output=True, timeout=120)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the whole test session, with prepared transactions enabled."""
    with running_postgres() as server:
        yield server


@contextmanager
def fresh_database(server: PostgresServer) -> Iterator[str]:
    """A new, empty database on ``server`` (its DSN); dropped on exit (its prepared transactions first)."""
    import psycopg
    from psycopg import sql

    dbname = f"test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(server.dsn(), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    yield server.dsn(dbname)
    with psycopg.connect(server.dsn(dbname), autocommit=True) as conn:
        for (gid,) in conn.execute("SELECT gid FROM pg_prepared_xacts WHERE database = current_database()").fetchall():
            conn.execute(sql.SQL("ROLLBACK PREPARED {}").format(sql.Literal(gid)))
    with psycopg.connect(server.dsn(), autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname)))


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, empty database for one test; dropped afterwards (its prepared transactions first)."""
    with fresh_database(postgres_server) as dsn:
        yield dsn
