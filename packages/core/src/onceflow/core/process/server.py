"""ServerProcess: a onceflow gRPC service (``python -m MODULE --config FILE --ready-file FILE``) as a child."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from onceflow.core.process.service import ServiceProcess


class ServerProcess(ServiceProcess):
    """A service configured by ``settings`` (its TOML structure as nested dicts) with a ``[server]`` table.

    Subclasses name :attr:`MODULE`, :attr:`NAME`, :attr:`LOG_FILE` and :attr:`CONFIG_FILE`.
    ``server.host`` defaults to 127.0.0.1 and ``server.port`` to 0, which picks a free port on the
    first start, written into the config of every restart.
    """

    MODULE = ""
    """The module ``python -m`` runs."""
    STDOUT_TO_LOG = False

    def __init__(
        self,
        work_dir: Path,
        settings: Mapping[str, Any] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        startup_timeout: float = 60.0,
        stop_timeout: float = 10.0,
    ) -> None:
        self.settings: dict[str, Any] = dict(settings or {})
        server = {"host": "127.0.0.1", "port": 0, **self.settings.get("server", {})}
        self.settings["server"] = server
        super().__init__(
            work_dir,
            port=int(server["port"]),
            env=env,
            cwd=cwd,
            startup_timeout=startup_timeout,
            stop_timeout=stop_timeout,
        )

    @property
    def host(self) -> str:
        return str(self.settings["server"]["host"])

    @property
    def target(self) -> str:
        """``host:port`` for gRPC channels (known after the first start)."""
        return f"{self.host}:{self.port}"

    def config_settings(self) -> Mapping[str, Any]:
        return {**self.settings, "server": {**self.settings["server"], "port": self._port}}

    def command(self) -> list[str]:
        assert self.config_path is not None and self.ready_path is not None
        return [
            sys.executable,
            "-m",
            self.MODULE,
            "--config",
            str(self.config_path),
            "--ready-file",
            str(self.ready_path),
        ]
