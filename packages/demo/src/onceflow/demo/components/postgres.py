"""An optional local PostgreSQL server for the PostgreSQL sink (``onceflow demo --postgres``).

The server's data lives in the run dir (``data/postgres/pgdata``), so ``--resume`` finds it again.
It is started with ``pg_ctl`` (which daemonizes), before the other services, and is not a chaos
victim. ``max_prepared_transactions`` is on: the sink uses ``PREPARE TRANSACTION``. When the demo
runs as root, the server runs as the ``postgres`` OS user (PostgreSQL refuses root).
"""

from __future__ import annotations

import hashlib
import os
import pwd
import subprocess
import tempfile
from pathlib import Path

from onceflow.core.errors import InvalidConfig
from onceflow.core.logging import get_logger
from onceflow.sinks.postgres.server_binaries import find_server_binaries

_log = get_logger(__name__)

DATABASE = "onceflow"
SERVER_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "unix_socket_directories": "''",
    "max_prepared_transactions": "20",
    "fsync": "on",
}


def find_postgres_bin() -> Path:
    """The directory of ``initdb`` and ``pg_ctl``; a clear error when PostgreSQL is not installed."""
    found = find_server_binaries()
    if found is None:
        raise InvalidConfig("--postgres", "PostgreSQL server binaries (initdb, pg_ctl) not found; run `make setup`")
    return found


def _reachable_by_server_user(path: Path) -> bool:
    """True when the ``postgres`` OS user can write ``path`` (every ancestor must be traversable)."""
    check = subprocess.run(["runuser", "-u", "postgres", "--", "test", "-w", str(path)], capture_output=True)
    return check.returncode == 0


def fallback_base(base: Path) -> Path:
    """The temp-dir stand-in for ``base`` (stable per run dir, so ``--resume`` finds it)."""
    digest = hashlib.sha256(str(base.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"onceflow-demo-postgres-{digest}"


def server_base(base: Path) -> Path:
    """Where the server's files go: ``base``, unless the demo runs as root and the ``postgres`` user
    cannot reach it (a run dir under a 0700 home or pytest's temp root). Then a directory under the
    system temp dir, named after ``base`` so that ``--resume`` finds the same one again."""
    if os.geteuid() != 0:
        return base
    base.mkdir(parents=True, exist_ok=True)
    owner = pwd.getpwnam("postgres")
    os.chown(base, owner.pw_uid, owner.pw_gid)
    if _reachable_by_server_user(base):
        return base
    fallback = fallback_base(base)
    _log.warning(
        "postgres.data_dir_moved", wanted=str(base), used=str(fallback), reason="not reachable by user postgres"
    )
    return fallback


class LocalPostgres:
    """A PostgreSQL server on ``127.0.0.1:port`` with its data under ``base`` (see :func:`server_base`)."""

    def __init__(self, base: Path, port: int) -> None:
        base = server_base(base)
        self.base = base
        self.port = port
        self.data_dir = base / "pgdata"
        self.log_path = base / "server.log"

    def dsn(self, dbname: str = DATABASE) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={dbname} connect_timeout=10"

    def _as_server_user(self, argv: list[str]) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv

    def _run(self, argv: list[str], what: str) -> None:
        result = subprocess.run(self._as_server_user(argv), capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"{what} failed ({result.returncode}): {result.stdout}{result.stderr}")

    def start(self) -> str:
        """Steps: 1. initdb (first time only); 2. pg_ctl start; 3. create the database. Returns its DSN."""
        bindir = find_postgres_bin()
        self.base.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(self.base, owner.pw_uid, owner.pw_gid)
        # Step 1
        if not (self.data_dir / "PG_VERSION").exists():
            self._run(
                [str(bindir / "initdb"), "-D", str(self.data_dir), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
                "initdb",
            )
            with (self.data_dir / "postgresql.conf").open("a") as conf:
                conf.writelines(f"{key} = {value}\n" for key, value in SERVER_SETTINGS.items())
        # Step 2
        self._run(
            [str(bindir / "pg_ctl"), "-D", str(self.data_dir), "-w", "-t", "60", "-l", str(self.log_path),
             "-o", f"-p {self.port}", "start"],
            "pg_ctl start",
        )  # fmt: skip
        # Step 3
        import psycopg

        with psycopg.connect(self.dsn("postgres"), autocommit=True) as admin:
            exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone()
            if not exists:
                admin.execute(f"CREATE DATABASE {DATABASE}")
        _log.info("postgres.started", port=self.port, data_dir=str(self.data_dir))
        return self.dsn()

    def stop(self) -> None:
        bindir = find_postgres_bin()
        subprocess.run(
            self._as_server_user([str(bindir / "pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "stop"]),
            capture_output=True,
            timeout=120,
        )
        _log.info("postgres.stopped", port=self.port)
