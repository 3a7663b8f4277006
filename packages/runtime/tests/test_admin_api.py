"""The Connect admin API over gRPC and through ``onceflow connect ...``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from onceflow.cli.app import main as onceflow
from onceflow.contract.clients import ConnectClient, RequestRefused
from onceflow.contract.connect import ConnectorOffset
from onceflow.runtime.service import ConnectWorkerService

ServiceFactory = Callable[..., ConnectWorkerService]
Waiter = Callable[..., Any]


def _state(client: ConnectClient, name: str) -> str:
    status = client.get_connector_status(name)
    return status.tasks[0].state if status.tasks else "NO TASKS"


def test_grpc_lifecycle_status_and_offsets(service_factory: ServiceFactory, waiter: Waiter) -> None:
    service = service_factory()
    with ConnectClient(f"127.0.0.1:{service.port}") as client:
        config = {"connector.class": "counter", "topic": "admin-out", "rate": "200", "tasks.max": "2"}
        created = client.create_connector("c", config)
        assert (created.name, created.tasks, created.type) == ("c", (0, 1), "source")
        assert created.config["topic"] == "admin-out"
        with pytest.raises(RequestRefused) as exists:
            client.create_connector("c", config)
        assert exists.value.code() == grpc.StatusCode.ALREADY_EXISTS
        with pytest.raises(ValueError, match="unknown connector state 'SLEEPING'"):
            client.create_connector("d", config, initial_state="SLEEPING")
        assert client.list_connectors().names == ("c",)
        waiter(lambda: _state(client, "c") == "RUNNING", what="RUNNING")
        client.pause_connector("c")
        waiter(lambda: _state(client, "c") == "PAUSED", what="PAUSED")
        client.resume_connector("c")
        waiter(lambda: _state(client, "c") == "RUNNING", what="RUNNING again")
        task = client.get_task_status("c", 1)
        assert task.transactional_id == "onceflow-src-c-1" and task.worker_id == service.worker_id
        client.restart_task("c", 0)
        tasks = client.list_tasks("c")
        assert [t.config["task.index"] for t in tasks] == ["0", "1"]
        # Offsets: read, then alter while STOPPED (KIP-875), and the task resumes from there.
        waiter(lambda: len(client.get_connector_offsets("c")) == 2)
        alter = [ConnectorOffset(partition={"counter": 0}, offset={"n": 1_000_000})]
        with pytest.raises(RequestRefused) as running:
            client.alter_connector_offsets("c", alter)
        assert running.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        client.stop_connector("c")
        waiter(lambda: _state(client, "c") == "STOPPED", what="STOPPED")
        assert "altered" in client.alter_connector_offsets("c", alter)
        by_task = {o.partition["counter"]: (o.offset or {})["n"] for o in client.get_connector_offsets("c")}
        assert by_task[0] == 1_000_000  # a whole number comes back as an int
        client.reset_connector_offsets("c")
        assert not client.get_connector_offsets("c")
        client.delete_connector("c")
        with pytest.raises(RequestRefused) as gone:
            client.get_connector("c")
        assert gone.value.code() == grpc.StatusCode.NOT_FOUND


def test_invalid_config_is_invalid_argument_naming_the_setting(service_factory: ServiceFactory) -> None:
    service = service_factory()
    with ConnectClient(f"127.0.0.1:{service.port}") as client:
        bad = {"connector.class": "access-log-generator", "rate": "fast"}
        with pytest.raises(RequestRefused) as info:
            client.create_connector("g", bad)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "'rate'" in info.value.details()
        with pytest.raises(RequestRefused) as unknown:
            client.create_connector("g", {"connector.class": "nope"})
        assert unknown.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "'connector.class'" in unknown.value.details()
        result = client.validate_connector_config("access-log-file", {})
        assert result.error_count == 1
        assert [c.name for c in result.configs if c.errors] == ["file"]
        plugins = {p.name: p for p in client.list_plugins()}
        assert {"access-log-file", "access-log-generator", "counter"} <= set(plugins)
        assert plugins["counter"].type == "source"


def _cli(port: int, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any, str]:
    code = onceflow(["connect", "--server", f"127.0.0.1:{port}", *args])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def test_cli_commands(
    service_factory: ServiceFactory, waiter: Waiter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = service_factory().port
    config_file = tmp_path / "c.json"
    config_file.write_text(
        json.dumps({"name": "cli", "config": {"connector.class": "counter", "topic": "cli-out", "rate": "100"}})
    )
    code, doc, _ = _cli(port, "create", "cli", "--file", str(config_file), capsys=capsys)
    assert code == 0 and doc["connector"]["name"] == "cli"
    assert _cli(port, "list", capsys=capsys)[1]["names"] == ["cli"]
    assert _cli(port, "config", "cli", capsys=capsys)[1]["config"]["topic"] == "cli-out"
    assert _cli(port, "get", "cli", capsys=capsys)[1]["connector"]["tasks"] == [0]
    assert _cli(port, "list", "--expand", "status", capsys=capsys)[1]["statuses"][0]["type"] == "source"
    assert _cli(port, "tasks", "cli", capsys=capsys)[1]["tasks"][0]["config"]["topic"] == "cli-out"
    waiter(lambda: _cli(port, "status", "cli", capsys=capsys)[1]["status"]["tasks"][0]["state"] == "RUNNING")
    assert _cli(port, "pause", "cli", capsys=capsys)[0] == 0
    waiter(lambda: _cli(port, "status", "cli", capsys=capsys)[1]["status"]["tasks"][0]["state"] == "PAUSED")
    assert _cli(port, "resume", "cli", capsys=capsys)[0] == 0
    assert _cli(port, "restart", "cli", "--include-tasks", "--only-failed", capsys=capsys)[0] == 0
    assert (
        _cli(port, "update", "cli", "--file", str(config_file), "-c", "rate=50", capsys=capsys)[1]["created"] is False
    )
    assert _cli(port, "stop", "cli", capsys=capsys)[0] == 0
    waiter(lambda: _cli(port, "offsets", "get", "cli", capsys=capsys)[1].get("offsets"), what="offsets")
    body = json.dumps({"offsets": [{"partition": {"counter": 0}, "offset": {"n": 41}}]})
    assert _cli(port, "offsets", "alter", "cli", "--offsets", body, capsys=capsys)[0] == 0
    assert _cli(port, "offsets", "get", "cli", capsys=capsys)[1]["offsets"][0]["offset"] == {"n": 41}
    assert _cli(port, "offsets", "reset", "cli", capsys=capsys)[0] == 0
    assert "access-log-generator" in {p["name"] for p in _cli(port, "plugins", capsys=capsys)[1]["plugins"]}
    code, doc, _ = _cli(port, "validate", "access-log-generator", "-c", "count=-1", capsys=capsys)
    assert code == 1 and doc["error_count"] == 1
    code, _, err = _cli(
        port, "create", "bad", "-c", "connector.class=counter", "-c", "topic=t", "-c", "tasks.max=x", capsys=capsys
    )
    assert code == 1 and "INVALID_ARGUMENT" in err and "'tasks.max'" in err
    assert _cli(port, "delete", "cli", capsys=capsys)[0] == 0
    code, _, err = _cli(port, "status", "cli", capsys=capsys)
    assert code == 1 and "NOT_FOUND" in err
