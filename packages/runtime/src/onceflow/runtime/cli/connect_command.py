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
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from onceflow.core.contract.clients import ConnectClient, RpcFailed
from onceflow.core.errors import InvalidConfig
from onceflow.core.settings import TlsSettings, parse_pairs
from onceflow.proto.v1 import connect_pb2 as pb
from onceflow.runtime.admin.convert import dict_to_struct
from onceflow.runtime.config.files import load_connector_file

DEFAULT_SERVER = "127.0.0.1:8083"
_INITIAL = {"running": pb.WORK_STATE_RUNNING, "paused": pb.WORK_STATE_PAUSED, "stopped": pb.WORK_STATE_STOPPED}


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
            sub.add_argument("--initial-state", choices=sorted(_INITIAL), default="running")
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


def _offsets(args: argparse.Namespace) -> list[pb.ConnectorOffset]:
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
        entry = pb.ConnectorOffset(partition=dict_to_struct(item["partition"]))
        if item.get("offset") is not None:
            entry.offset.CopyFrom(dict_to_struct(item["offset"]))
        result.append(entry)
    return result


def _request(args: argparse.Namespace) -> tuple[str, Any]:
    command, name = args.connect_command, getattr(args, "name", "")
    simple = {
        "get": ("GetConnector", pb.GetConnectorRequest), "config": ("GetConnectorConfig", pb.GetConnectorConfigRequest),
        "delete": ("DeleteConnector", pb.DeleteConnectorRequest), "pause": ("PauseConnector", pb.PauseConnectorRequest),
        "resume": ("ResumeConnector", pb.ResumeConnectorRequest), "stop": ("StopConnector", pb.StopConnectorRequest),
        "status": ("GetConnectorStatus", pb.GetConnectorStatusRequest),
    }  # fmt: skip
    if command in simple:
        method, message = simple[command]
        return method, message(name=name)
    if command == "list":
        return "ListConnectors", pb.ListConnectorsRequest(
            expand_status="status" in args.expand, expand_info="info" in args.expand
        )
    if command == "create":
        return "CreateConnector", pb.CreateConnectorRequest(
            name=name, config=_config(args, name), initial_state=_INITIAL[args.initial_state]
        )
    if command == "update":
        return "UpdateConnectorConfig", pb.UpdateConnectorConfigRequest(name=name, config=_config(args, name))
    if command == "restart":
        if args.task is not None:
            return "RestartTask", pb.RestartTaskRequest(connector=name, task=args.task)
        return "RestartConnector", pb.RestartConnectorRequest(
            name=name, include_tasks=args.include_tasks, only_failed=args.only_failed
        )
    if command == "tasks":
        return "ListTasks", pb.ListTasksRequest(connector=name)
    if command == "offsets":
        if args.action == "get":
            return "GetConnectorOffsets", pb.GetConnectorOffsetsRequest(name=name)
        if args.action == "reset":
            return "ResetConnectorOffsets", pb.ResetConnectorOffsetsRequest(name=name)
        return "AlterConnectorOffsets", pb.AlterConnectorOffsetsRequest(name=name, offsets=_offsets(args))
    if command == "plugins":
        return "ListPlugins", pb.ListPluginsRequest(include_all=True)
    return "ValidateConnectorConfig", pb.ValidateConnectorConfigRequest(plugin=args.plugin, config=_config(args))


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
    method, request = _request(args)
    tls = TlsSettings(ca=args.tls_ca, token_file=args.token_file)
    with ConnectClient(args.server, tls, timeout_s=args.timeout) as client:
        try:
            response = client.call(method, request)
        except RpcFailed as exc:
            print(f"onceflow: error: {exc.code().name}: {exc.details()}", file=sys.stderr)
            return 1
    doc = json_format.MessageToDict(
        response, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    print(json.dumps(doc, indent=2, sort_keys=True))
    if method == "ValidateConnectorConfig" and doc.get("error_count", 0):
        return 1
    return 0
