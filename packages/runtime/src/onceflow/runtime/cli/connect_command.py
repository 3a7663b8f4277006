"""``onceflow connect ...``: the admin API from the command line (JSON on stdout).

    onceflow connect --server localhost:8083 create gen --file gen.json
    onceflow connect create gen -c connector.class=access-log-generator -c seed=7
    onceflow connect list | get | config | update | delete | pause | resume | stop NAME
    onceflow connect restart NAME [--include-tasks] [--only-failed] [--task N]
    onceflow connect status | tasks NAME
    onceflow connect offsets get NAME | offsets alter NAME --file offsets.json | offsets reset NAME
    onceflow connect plugins | validate PLUGIN -c key=value ...
    onceflow connect describe [PLUGIN ...]     every setting of the installed plugins (no worker needed)

``offsets alter`` takes ``{"offsets": [{"partition": {...}, "offset": {...} | null}, ...]}`` (the
Kafka Connect REST body).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from onceflow.contract.clients import ConnectClient, RpcFailed
from onceflow.contract.connect import ConnectorOffset
from onceflow.core.errors import InvalidConfig
from onceflow.core.settings import TlsSettings, parse_pairs
from onceflow.runtime.config.files import load_connector_file

DEFAULT_SERVER = "127.0.0.1:8083"
_INITIAL_STATES = ("running", "paused", "stopped")


def _config_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--file", "-f", help="connector config file (JSON or properties)")
    parser.add_argument("-c", "--set", dest="settings", action="append", default=[], metavar="KEY=VALUE")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("connect", help="manage connectors of a connect worker (admin gRPC API)")
    parser.add_argument("--server", default=DEFAULT_SERVER, help=f"worker admin address (default {DEFAULT_SERVER})")
    parser.add_argument("--tls-ca", default="", help="CA certificate: use TLS")
    parser.add_argument(
        "--token-file", default="", help="bearer token for the mutating RPCs, when the worker requires one"
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="deadline of each call, seconds")
    commands = parser.add_subparsers(title="connect commands", dest="connect_command", metavar="COMMAND", required=True)
    listing = commands.add_parser("list", help="connector names")
    listing.add_argument("--expand", choices=["status", "info"], action="append", default=[])
    for name, text in [("create", "create a connector"), ("update", "create or replace a connector's config")]:
        sub = commands.add_parser(name, help=text)
        sub.add_argument("name")
        _config_args(sub)
        if name == "create":
            sub.add_argument("--initial-state", choices=_INITIAL_STATES, default="running")
    for name, text in [
        ("get", "connector info"), ("config", "connector config"), ("delete", "delete a connector"),
        ("pause", "pause a connector's tasks"), ("resume", "resume a paused connector"),
        ("stop", "stop a connector's tasks, keep its config"), ("status", "connector and task statuses"),
        ("tasks", "task configs"),
    ]:  # fmt: skip
        commands.add_parser(name, help=text).add_argument("name")
    restart = commands.add_parser("restart", help="restart a connector (and its tasks) or one task")
    restart.add_argument("name")
    restart.add_argument("--include-tasks", action="store_true")
    restart.add_argument("--only-failed", action="store_true")
    restart.add_argument("--task", type=int, help="restart only this task")
    offsets = commands.add_parser("offsets", help="source offsets (get, alter, reset)")
    offsets.add_argument("action", choices=["get", "alter", "reset"])
    offsets.add_argument("name")
    offsets.add_argument("--file", "-f", help='alter: JSON {"offsets": [{"partition": {...}, "offset": {...}}]}')
    offsets.add_argument("--offsets", help="alter: the same JSON inline")
    commands.add_parser("plugins", help="installed connector plugins")
    describe = commands.add_parser(
        "describe", help="every setting of the installed plugins: type, default, allowed values, description"
    )
    describe.add_argument("plugins", nargs="*", metavar="PLUGIN", help="only these (default: every plugin)")
    validate = commands.add_parser("validate", help="validate a config against a plugin")
    validate.add_argument("plugin")
    _config_args(validate)
    parser.set_defaults(func=run)


def _config(args: argparse.Namespace, name: str | None = None) -> dict[str, str]:
    config: dict[str, str] = {}
    if args.file:
        _, config = load_connector_file(args.file)
    config.update(parse_pairs(args.settings, "-c"))
    if name is not None:
        config.setdefault("name", name)
    return config


def _offsets(args: argparse.Namespace) -> list[ConnectorOffset]:
    text = Path(args.file).read_text() if args.file else args.offsets
    if not text:
        raise InvalidConfig("--offsets", "alter needs --file or --offsets")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidConfig("--offsets", f"not JSON: {exc}") from None
    items = doc.get("offsets") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise InvalidConfig("offsets", 'expected {"offsets": [...]}')
    result = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("partition"), dict):
            raise InvalidConfig(f"offsets[{i}].partition", "must be an object")
        offset = item.get("offset")
        if offset is not None and not isinstance(offset, dict):
            raise InvalidConfig(f"offsets[{i}].offset", "must be an object or null")
        result.append(ConnectorOffset(item["partition"], offset))
    return result


def _answer(client: ConnectClient, args: argparse.Namespace) -> dict[str, Any]:
    """The sub-command's call, and its answer as the JSON document the command prints (the shape of
    the RPC's response: ``{"connector": {...}}``, ``{"status": {...}}``, ...)."""
    command, name = args.connect_command, getattr(args, "name", "")
    lifecycle = {
        "delete": client.delete_connector, "pause": client.pause_connector,
        "resume": client.resume_connector, "stop": client.stop_connector,
    }  # fmt: skip
    if command in lifecycle:
        lifecycle[command](name)
        return {}
    if command == "list":
        return asdict(client.list_connectors(expand_status="status" in args.expand, expand_info="info" in args.expand))
    if command == "create":
        info = client.create_connector(name, _config(args, name), initial_state=args.initial_state)
        return {"connector": asdict(info)}
    if command == "get":
        return {"connector": asdict(client.get_connector(name))}
    if command == "config":
        return {"config": client.get_connector_config(name)}
    if command == "update":
        return asdict(client.update_connector_config(name, _config(args, name)))
    if command == "status":
        return {"status": asdict(client.get_connector_status(name))}
    if command == "restart":
        if args.task is not None:
            client.restart_task(name, args.task)
            return {}
        status = client.restart_connector(name, include_tasks=args.include_tasks, only_failed=args.only_failed)
        return {"status": asdict(status)}
    if command == "tasks":
        return {"tasks": [asdict(task) for task in client.list_tasks(name)]}
    if command == "offsets":
        if args.action == "get":
            return {"offsets": [asdict(offset) for offset in client.get_connector_offsets(name)]}
        if args.action == "reset":
            return {"message": client.reset_connector_offsets(name)}
        return {"message": client.alter_connector_offsets(name, _offsets(args))}
    if command == "plugins":
        return {"plugins": [asdict(plugin) for plugin in client.list_plugins(include_all=True)]}
    return asdict(client.validate_connector_config(args.plugin, _config(args)))


def run_describe(args: argparse.Namespace) -> int:
    """``describe``: read from the installed plugins themselves, so no worker is needed."""
    from onceflow.runtime.config.describe import describe
    from onceflow.runtime.plugins import PluginRegistry
    from onceflow.runtime.worker.worker import connector_config_def

    registry = PluginRegistry.discover()
    plugins = [registry.lookup(name) for name in args.plugins] if args.plugins else registry.plugins()
    for plugin in plugins:
        sys.stdout.write(describe(plugin, connector_config_def(plugin.connector_class)) + "\n")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.connect_command == "describe":
        return run_describe(args)
    tls = TlsSettings(ca=args.tls_ca, token_file=args.token_file)
    with ConnectClient(args.server, tls, timeout_s=args.timeout) as client:
        try:
            doc = _answer(client, args)
        except RpcFailed as exc:
            print(f"onceflow: error: {exc.code().name}: {exc.details()}", file=sys.stderr)
            return 1
    print(json.dumps(doc, indent=2, sort_keys=True))
    if args.connect_command == "validate" and doc.get("error_count", 0):
        return 1
    return 0
