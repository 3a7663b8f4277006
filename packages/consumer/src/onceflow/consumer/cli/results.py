"""``onceflow results``: query a running consumer's Results API.

Examples::

    onceflow results tables                    # the stored tables: topic, mode, format, keys, columns
    onceflow results rows server_errors --limit 100            # one page; the next page's token on stderr
    onceflow results rows server_errors --all                  # every row, page by page
    onceflow results watch-rows server_errors  # rows as the consumer stores them, until Ctrl-C
    onceflow results dump ip_count_sink --bootstrap-servers 127.0.0.1:9092 | head
    onceflow results dump-table lake ip_counts --participant-config participant.toml [--version 3]

``dump`` reads a topic from Kafka directly (read_committed, from the start to its end) and prints one
JSON object per record with its Avro single-object value decoded (AccessEvent, IpCount), so nobody
needs Python to read a sink topic; undecodable values are printed as base64 with the reason.
``dump-table`` prints a Delta Lake or Iceberg table of a participant's sink (from its config), one
JSON object per row, at its current version or at ``--version`` (a Delta version, an Iceberg
snapshot id: time travel).

Every command takes ``--results HOST:PORT`` (default ``$ONCEFLOW_RESULTS_TARGET`` or
127.0.0.1:7200); TLS with ``--tls-ca`` and, for mTLS, ``--tls-cert``/``--tls-key``. Output: ``rows`` and
``watch-rows`` one JSON object per row (timestamps ISO-8601, decimals as strings, binary as base64);
``tables`` one tab-separated line per table. Exit codes: 0 done, 1 the server refused (an unknown
table) or could not be reached, 2 bad arguments. (An extension's services have their own commands:
the IP-count example's ``onceflow ipcount counts|top|watch``.)
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from collections.abc import Callable, Generator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import grpc

from onceflow.contract.clients import ResultsClient, RpcFailed
from onceflow.contract.results import RowsUpdate
from onceflow.core.avro import REGISTRY
from onceflow.core.avro.arrow import json_value
from onceflow.core.defaults import BOOTSTRAP_SERVERS
from onceflow.core.end_of_input import is_marker
from onceflow.core.errors import SerializationError
from onceflow.core.kafka import TopicRecord, read_committed
from onceflow.core.settings import KafkaSettings, TlsSettings, parse_pairs

DEFAULT_TARGET_ENV = "ONCEFLOW_RESULTS_TARGET"
DEFAULT_TARGET = "127.0.0.1:7200"

U = TypeVar("U")


def add_target_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--results",
        metavar="HOST:PORT",
        default=os.environ.get(DEFAULT_TARGET_ENV, DEFAULT_TARGET),
        help=f"Results API address (default: ${DEFAULT_TARGET_ENV} or {DEFAULT_TARGET})",
    )
    parser.add_argument("--tls-ca", metavar="PEM", default="", help="CA of the server's certificate (enables TLS)")
    parser.add_argument("--tls-cert", metavar="PEM", default="", help="client certificate (mTLS)")
    parser.add_argument("--tls-key", metavar="PEM", default="", help="client key (mTLS)")
    parser.add_argument("--token-file", metavar="FILE", default="", help="bearer token, when the server requires one")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="deadline of each call")


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Entry point of the ``onceflow.cli`` group: adds ``results tables|rows|watch-rows|dump``
    and ``dump-table``."""
    common = argparse.ArgumentParser(add_help=False)
    add_target_arguments(common)
    parser = subparsers.add_parser(
        "results", help="query the results consumer", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    commands = parser.add_subparsers(title="results commands", metavar="COMMAND", required=True)

    tables = commands.add_parser("tables", parents=[common], help="the stored tables")
    tables.set_defaults(func=_tables)

    rows = commands.add_parser("rows", parents=[common], help="rows of a stored table, one JSON object per line")
    rows.add_argument("table")
    rows.add_argument("--limit", type=int, default=0, metavar="N", help="rows per page (0: the server's 100)")
    rows.add_argument("--page-token", default="", metavar="TOKEN", help="the page after the one that printed TOKEN")
    rows.add_argument("--all", action="store_true", help="every page, not just one")
    rows.set_defaults(func=_rows)

    watch_rows = commands.add_parser("watch-rows", parents=[common], help="print a table's rows as they are stored")
    watch_rows.add_argument("table")
    watch_rows.add_argument("--max-batches", type=int, default=0, metavar="N", help="stop after N batches (0: never)")
    watch_rows.set_defaults(func=_watch_rows)

    dump = commands.add_parser("dump", help="print a topic's records, decoded, one JSON object per line")
    dump.add_argument("topic")
    dump.add_argument("--bootstrap-servers", default=BOOTSTRAP_SERVERS, metavar="HOST:PORT")
    dump.add_argument("-X", dest="properties", action="append", default=[], metavar="KEY=VALUE",
                      help="librdkafka property (security.protocol, sasl.*, ssl.*)")  # fmt: skip
    dump.add_argument("--limit", type=int, default=0, metavar="N", help="stop after N records (0: all)")
    dump.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS")
    dump.set_defaults(func=_dump)

    table = commands.add_parser("dump-table", help="print a Delta or Iceberg table of a sink, one JSON object per row")
    table.add_argument("sink", help="the sink's name in the participant config")
    table.add_argument("table")
    table.add_argument("--participant-config", type=Path, required=True, metavar="FILE")
    table.add_argument("--version", type=int, default=None, metavar="V", help="a Delta version / Iceberg snapshot id")
    table.add_argument("--limit", type=int, default=0, metavar="N", help="stop after N rows (0: all)")
    table.set_defaults(func=_dump_table)


def client_tls(args: argparse.Namespace) -> TlsSettings:
    """The TLS settings and token of the command line (:func:`add_target_arguments`)."""
    return TlsSettings(ca=args.tls_ca, cert=args.tls_cert, key=args.tls_key, token_file=args.token_file)


def results_client(args: argparse.Namespace) -> ResultsClient:
    """The Results client of the command line's ``--results`` target, TLS and token; ``--timeout`` per call."""
    return ResultsClient(args.results, client_tls(args), timeout_s=args.timeout)


def rpc_failure(exc: RpcFailed, target: str) -> int:
    """Print a failed call's status and details; the exit code (2 for INVALID_ARGUMENT, else 1)."""
    print(f"onceflow results: {target}: {exc.code().name}: {exc.details()}", file=sys.stderr)
    return 2 if exc.code() == grpc.StatusCode.INVALID_ARGUMENT else 1


def _tables(args: argparse.Namespace) -> int:
    with results_client(args) as client:
        try:
            tables = client.list_tables()
        except RpcFailed as exc:
            return rpc_failure(exc, args.results)
    print("\t".join(["table", "topic", "mode", "format", "keys", "columns"]))
    for table in tables:
        columns = ", ".join(f"{c.name}:{c.type}{'' if c.nullable else ' not null'}" for c in table.columns)
        fields = [table.table, table.topic or "-", table.mode, table.value_format, ",".join(table.keys) or "-"]
        print("\t".join([*fields, columns or "- (not created yet)"]))
    return 0


def _rows(args: argparse.Namespace) -> int:
    token = args.page_token
    with results_client(args) as client:
        while True:
            try:
                page = client.list_rows(args.table, args.limit, token)
            except RpcFailed as exc:
                return rpc_failure(exc, args.results)
            for row in page.rows:
                print(row)
            token = page.next_page_token
            if not token:
                break
            if not args.all:
                print(f"# more rows: --page-token {token}", file=sys.stderr)
                break
    sys.stdout.flush()
    return 0


def offsets_text(offsets: Mapping[int, int]) -> str:
    """A watch update's offsets as ``partition:offset`` pairs ("-" for none)."""
    return " ".join(f"{p}:{o}" for p, o in sorted(offsets.items())) or "-"


def follow(stream: Generator[U, None, None], show: Callable[[U], bool], max_batches: int) -> None:
    """``show`` every update of a watch (it answers whether the update held a batch: the first one holds
    none) until ``max_batches`` batches were shown (0: until the stream ends); then close the stream,
    which cancels the call."""
    batches = 0
    for update in stream:
        if not show(update):
            continue
        batches += 1
        if max_batches and batches >= max_batches:
            stream.close()
            return


def _watch_rows(args: argparse.Namespace) -> int:
    def show(update: RowsUpdate) -> bool:
        for row in update.rows:
            print(row)
        print(f"# {'offsets' if update.rows else 'watching; offsets'} {offsets_text(update.offsets)}", file=sys.stderr)
        sys.stdout.flush()
        return bool(update.rows)

    with results_client(args) as client:
        try:
            follow(client.watch_rows(args.table), show, args.max_batches)
        except RpcFailed as exc:
            return rpc_failure(exc, args.results)
    return 0


def record_json(record: TopicRecord) -> dict[str, Any]:
    """One record as ``dump`` prints it: coordinates, key, decoded value (or base64 and the reason)."""
    doc: dict[str, Any] = {"partition": record.partition, "offset": record.offset}
    doc["key"] = record.key.decode("utf-8", "backslashreplace") if record.key is not None else None
    if is_marker(record.headers):
        doc["end_of_input"] = json.loads(record.value or b"null")
        return doc
    try:
        serde = REGISTRY.serde_for(record.value or b"")
        doc["schema"] = serde.name
        doc["value"] = serde.decode(record.value or b"")
    except SerializationError as exc:
        doc["value_base64"] = base64.b64encode(record.value or b"").decode()
        doc["error"] = str(exc)
    return doc


def _dump_table(args: argparse.Namespace) -> int:
    from onceflow.core.settings import load_settings
    from onceflow.sinks.readback import LakehouseReader, reader_for
    from onceflow.sinks.server.settings import ParticipantSettings

    settings = load_settings(ParticipantSettings, args.participant_config)
    sinks = {sink.name: sink for sink in settings.sinks}
    if args.sink not in sinks:
        print(
            f"onceflow results: no sink {args.sink!r} in {args.participant_config} ({', '.join(sinks)})",
            file=sys.stderr,
        )
        return 2
    reader = reader_for(sinks[args.sink])
    if not isinstance(reader, LakehouseReader):
        print(f"onceflow results: sink {args.sink!r} is not a Delta or Iceberg sink", file=sys.stderr)
        return 2
    with reader:
        rows = reader.format.read(args.table, args.version)
    if rows is None:
        print(f"onceflow results: sink {args.sink!r} has no table {args.table!r}", file=sys.stderr)
        return 1
    for printed, row in enumerate(rows.to_pylist(), start=1):
        print(json_value(row).decode())
        if args.limit and printed >= args.limit:
            break
    sys.stdout.flush()
    return 0


def _dump(args: argparse.Namespace) -> int:
    kafka = KafkaSettings(bootstrap_servers=args.bootstrap_servers, properties=parse_pairs(args.properties, "-X"))
    for printed, record in enumerate(read_committed(kafka, args.topic, timeout=args.timeout), start=1):
        print(json.dumps(record_json(record), sort_keys=True))
        if args.limit and printed >= args.limit:
            break
    sys.stdout.flush()
    return 0
