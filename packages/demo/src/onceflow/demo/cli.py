"""``onceflow demo``: the whole pipeline embedded, with a live dashboard, optional chaos, and a verdict.

Starts the broker (or uses an existing Kafka: --bootstrap-servers, with -X for librdkafka
properties), the coordinator, the sink participants (Kafka, SQLite, optionally PostgreSQL),
the consumer with its Results API, the Spark job (local[2]) and a connect worker running the
generator, or with --input FILE the access-log file tailer, as supervised child processes under a
run directory.

With the generator it stops after --events events were produced and fully processed; with --input
it reads the file from the start and stops at its end (--follow keeps tailing it through rotation,
as tail -F does, until --idle-timeout passes without a new line, or until Ctrl-C). Then it audits
every sink against an independent truth (the generator's, or a plain-Python recount of the file
that accounts for every line: events plus dead letters) and against the source topic.
Exit code 0 only when every sink is EXACT and every line is accounted for; 1 otherwise; 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from onceflow.core.errors import InvalidConfig
from onceflow.core.service import add_command
from onceflow.core.settings import parse_pairs
from onceflow.demo.options import DEFAULT_EVENTS, DEFAULT_RATE, DEFAULT_SEED, DemoOptions
from onceflow.logproducer.compressed import compressed_input_reason


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run-dir", type=Path, help="run directory (default ./runs/<UTC timestamp>)")
    parser.add_argument("--resume", action="store_true", help="continue the stopped run in --run-dir")
    parser.add_argument("--events", type=_positive_int, default=None,
                        help=f"events to generate in total (default {DEFAULT_EVENTS})")  # fmt: skip
    parser.add_argument("--rate", type=_positive_float, default=None,
                        help=f"generator events per second (default {DEFAULT_RATE:g}); with --resume, the pace of "
                        "the rest of the run (the events stay the same)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=None,
                        help=f"seed of the generated traffic (default {DEFAULT_SEED})")  # fmt: skip
    parser.add_argument(
        "--bootstrap-servers",
        default="",
        metavar="HOST:PORT[,...]",
        help="use this Kafka (Apache Kafka, any cluster) instead of the embedded broker",
    )
    parser.add_argument(
        "-X",
        dest="kafka_properties",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="librdkafka property for every client of the run (security.protocol, sasl.*, ssl.*)",
    )
    parser.add_argument(
        "--service-property",
        dest="service_kafka_properties",
        action="append",
        default=[],
        metavar="SERVICE:KEY=VALUE",
        help="librdkafka property of one service over -X (e.g. its own sasl.username), so that each "
        "service runs as its own principal (see 'onceflow acls')",
    )
    parser.add_argument(
        "--input",
        type=Path,
        metavar="FILE",
        help="run over this access-log file (nginx/Apache formats, JSON lines) instead of the generator",
    )
    parser.add_argument(
        "--follow", action="store_true", help="with --input: keep tailing the file through rotation, as tail -F does"
    )
    parser.add_argument("--idle-timeout", type=_positive_float, default=None, metavar="SECONDS",
                        help="with --follow: end the input after this long without a new line")  # fmt: skip
    parser.add_argument("--trigger-ms", type=_positive_int, default=5000, help="micro-batch (checkpoint) interval")
    parser.add_argument(
        "--chaos",
        action="store_true",
        help="kill -9 a random service every --chaos-interval (the input starts once every service serves)",
    )
    parser.add_argument("--chaos-interval", type=_positive_float, default=8.0, metavar="SECONDS")
    parser.add_argument(
        "--input-after-job",
        action="store_true",
        help="start the input once the Spark job serves, not while it warms up (always so with --chaos)",
    )
    parser.add_argument("--chaos-seed", type=int, default=None, help="seed of the chaos victims' draw")
    parser.add_argument("--postgres", action="store_true", help="start a local PostgreSQL server for its sink")
    parser.add_argument("--postgres-dsn", default="", help="use this PostgreSQL database for its sink")
    parser.add_argument("--lakehouse", action="store_true",
                        help="add a Delta Lake table (data/participant/lake) to the sinks and the audit")  # fmt: skip
    parser.add_argument("--timeout", type=_positive_float, default=None, metavar="SECONDS",
                        help="stop waiting for completion after this long, then audit anyway")  # fmt: skip
    parser.add_argument("--plain", action="store_true", default=None,
                        help="progress lines instead of the dashboard (default when stdout is not a tty)")  # fmt: skip
    parser.add_argument("--service-log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Entry point of the ``onceflow.cli`` group: adds ``onceflow demo``."""
    parser = add_command(
        subparsers,
        "demo",
        help="run the whole pipeline embedded, with a live dashboard and a final audit",
        description=__doc__,
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


SERVICES = ("coordinator", "participant", "consumer", "spark", "connect")
"""The services ``--service-property`` may name."""


def _service_properties(items: list[str]) -> dict[str, dict[str, str]]:
    """``["coordinator:sasl.username=c"]`` -> ``{"coordinator": {"sasl.username": "c"}}``."""
    by_service: dict[str, list[str]] = {}
    for item in items:
        service, sep, pair = item.partition(":")
        if not sep or service not in SERVICES:
            raise InvalidConfig(
                "--service-property", f"expected SERVICE:KEY=VALUE with SERVICE one of {SERVICES}, got {item!r}"
            )
        by_service.setdefault(service, []).append(pair)
    return {service: parse_pairs(pairs, "--service-property") for service, pairs in by_service.items()}


#: The flags whose value is the DemoOptions field of the same name, as it is.
_SAME_NAMES = (
    "run_dir", "resume", "rate", "trigger_ms", "chaos", "input_after_job", "chaos_seed", "postgres", "postgres_dsn",
    "lakehouse", "plain", "service_log_level", "bootstrap_servers", "follow",
)  # fmt: skip


def options_from(args: argparse.Namespace) -> DemoOptions:
    if args.resume and args.run_dir is None:
        raise InvalidConfig("--resume", "needs --run-dir (the run to continue)")
    properties = parse_pairs(args.kafka_properties, "-X")
    if properties and not args.bootstrap_servers:
        raise InvalidConfig("-X", "only goes with --bootstrap-servers (the embedded broker needs no properties)")
    per_service = _service_properties(args.service_kafka_properties)
    if per_service and not args.bootstrap_servers:
        raise InvalidConfig("--service-property", "only goes with --bootstrap-servers")
    if args.resume and (args.bootstrap_servers or properties):
        raise InvalidConfig("--bootstrap-servers", "a resumed run uses the Kafka it was started with")
    for flag, value in (("--events", args.events), ("--seed", args.seed), ("--input", args.input)):
        if args.resume and value is not None:
            raise InvalidConfig(flag, "a resumed run keeps the input it was started with (--rate may change its pace)")
    if args.input is not None and not args.input.is_file():
        raise InvalidConfig("--input", f"{args.input} is not a readable file")
    if args.input is not None and (compressed := compressed_input_reason(args.input)) is not None:
        raise InvalidConfig("--input", compressed)
    if (args.follow or args.idle_timeout is not None) and args.input is None:
        raise InvalidConfig("--follow/--idle-timeout", "only go with --input FILE")
    if args.idle_timeout is not None and not args.follow:
        raise InvalidConfig("--idle-timeout", "only goes with --follow (a file without --follow ends at its end)")
    return DemoOptions(
        **{name: getattr(args, name) for name in _SAME_NAMES},
        events=DEFAULT_EVENTS if args.events is None else args.events,
        seed=DEFAULT_SEED if args.seed is None else args.seed,
        chaos_interval_s=args.chaos_interval,
        timeout_s=args.timeout,
        input_path=args.input,
        idle_timeout_s=args.idle_timeout,
        kafka_properties=properties,
        service_kafka_properties=per_service,
    )


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    """Run the demo; returns its exit code (0 exact, 1 different, 130 interrupted)."""
    from onceflow.core.logging import configure_logging
    from onceflow.demo.runner import EXIT_DIFFERENT, DemoRun
    from onceflow.demo.supervisor import ServiceFailedError

    options = options_from(args)
    demo = DemoRun(options)
    # SIGTERM stops the demo like Ctrl-C: its services are stopped, never left behind. SIGINT is set
    # too: a process started in the background of a non-interactive shell inherits SIGINT ignored, and
    # Python then installs no KeyboardInterrupt handler, so a Ctrl-C sent with kill was lost (the
    # interrupted-run test saw the demo run to completion under a backgrounded `make test`).
    for stop_signal in (signal.SIGTERM, signal.SIGINT):
        signal.signal(stop_signal, _interrupt)
    # The demo's own log goes to the run dir; the terminal shows the dashboard.
    log_path = demo.run_dir.root / "logs" / "demo.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("a") as log:
        configure_logging(level="INFO", fmt="kv", stream=log)
        try:
            return demo.run()
        except ServiceFailedError as exc:
            print(f"onceflow demo: a service failed: {exc}", file=sys.stderr)
            return EXIT_DIFFERENT
