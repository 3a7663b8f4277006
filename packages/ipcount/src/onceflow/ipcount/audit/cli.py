"""``onceflow audit``: compare every sink with the ground truth; exit 1 on any difference.

Truth (one of):
  --replay JOB.toml [JOB.toml ...] --participant-config FILE
                                          the replay audit of any job: an alias of 'onceflow job audit'
                                          (see its --help; needs onceflow-spark; the other options
                                          below do not apply)
  --seed S --count N [-c KEY=VALUE ...]   the generator's first N events (its connector settings with -c)
  --source-topic ip_count_source          recount the topic, read with read_committed, per window and ip
  --input PATH                            recount an access-log file with an independent plain-Python
                                          parse, and account for every line: lines = events in
                                          --events-topic + dead letters in --dead-letter-topic, with
                                          the dead letters matching the malformed lines kind by kind

Sinks (any number; names default to the kind, repeated kinds get -2, -3, ...):
  --kafka-sink TOPIC      a topic written by the Kafka sink (read_committed; latest record per key wins)
  --sqlite-sink PATH      the SQLite sink's ip_counts table
  --postgres-sink DSN     the PostgreSQL sink's ip_counts table
  --store-sqlite PATH / --store-postgres DSN   the consumer's results table (sink "consumer")
  --config FILE           a consumer config: its [kafka], its store and its [[audit.sinks]]

--source-topic and --input also tally the dead-letter topic (--dead-letter-topic, default ip_count_dlq;
'' to skip it) per kind of problem.

--closed-only (default for --source-topic, i.e. a live run) leaves out windows that may still change:
those with window_end + allowed lateness after the newest event time of the truth, on both sides.
--no-closed-only compares everything (the default for generator truth).

--wait SECONDS audits again until every sink is EXACT (a pipeline that is still draining) or the time is up.

Per sink the report gives windows expected (window, ip rows), matched, missing, extra, count
mismatches and duplicated rows with the first differences, then a verdict line (EXACT / DIFFERENT);
the last line is the overall verdict. Exit codes: 0 every sink EXACT, 1 a difference, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from onceflow.consumer.exceptions import InvalidQuery
from onceflow.consumer.settings import AuditSinkSettings, ConsumerSettings, StoreSettings
from onceflow.core import defaults
from onceflow.core.plugins import CALLABLE, load_group
from onceflow.core.settings import KafkaSettings, load_settings, parse_pairs
from onceflow.core.topics import DEAD_LETTER_TOPIC, SOURCE_TOPIC
from onceflow.ipcount.audit import Auditor, FileSource, GeneratorSource, TopicSource, TruthSource, render
from onceflow.ipcount.audit.logfile import CONTAINER_LOGS
from onceflow.logproducer.compressed import compressed_input_reason

#: Pause between two audits with --wait.
WAIT_STEP_S = 5.0


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Entry point of the ``onceflow.cli`` group: adds the ``audit`` subcommand."""
    parser = subparsers.add_parser(
        "audit", help="compare every sink with the ground truth", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    truth = parser.add_mutually_exclusive_group(required=True)
    truth.add_argument("--seed", type=int, help="generator truth: the generator's seed (with --count)")
    truth.add_argument("--source-topic", metavar="TOPIC", help="truth recounted from this topic (ip_count_source)")
    truth.add_argument("--input", metavar="PATH", help="truth recounted from this access-log file")
    truth.add_argument("--replay", nargs="+", metavar="JOB_TOML", help="replay truth: these jobs' configs")
    parser.add_argument("--participant-config", metavar="FILE",
                        help="with --replay: the participant server's config (where each sink is)")  # fmt: skip
    parser.add_argument("--master", help="with --replay: the Spark master (default: the first job's spark.master)")
    parser.add_argument(
        "--events-topic",
        default=SOURCE_TOPIC,
        metavar="TOPIC",
        help=f"with --input: the topic the file's events went to (default {SOURCE_TOPIC})",
    )
    parser.add_argument(
        "--dead-letter-topic",
        default=DEAD_LETTER_TOPIC,
        metavar="TOPIC",
        help=f"the dead-letter topic to tally (default {DEAD_LETTER_TOPIC}; '' to skip)",
    )
    parser.add_argument("--max-line-bytes", type=int, default=1 << 20, metavar="N",
                        help="with --input: the tailer's max.line.bytes (longer lines arrive in pieces)")  # fmt: skip
    parser.add_argument("--container-log", choices=CONTAINER_LOGS, default="auto",
                        help="with --input: the tailer's container.log (a Docker or CRI log's wrapper)")  # fmt: skip
    parser.add_argument("--count", type=int, help="generator truth: the first N events")
    parser.add_argument(
        "-c", "--set", dest="generator", action="append", default=[], metavar="KEY=VALUE",
        help="generator setting, as in its connector config (ips, max.disorder.ms, event.time.*, ...)",
    )  # fmt: skip
    parser.add_argument("--config", metavar="FILE", help="consumer config: [kafka], [store], [[audit.sinks]]")
    parser.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="Kafka (overrides the config's)")
    parser.add_argument("--kafka-sink", action="append", default=[], metavar="TOPIC")
    parser.add_argument("--sqlite-sink", action="append", default=[], metavar="PATH")
    parser.add_argument("--postgres-sink", action="append", default=[], metavar="DSN")
    store = parser.add_mutually_exclusive_group()
    store.add_argument("--store-sqlite", metavar="PATH", help="the consumer's SQLite store")
    store.add_argument("--store-postgres", metavar="DSN", help="the consumer's PostgreSQL store")
    parser.add_argument("--sink", action="append", default=[], metavar="NAME", help="audit only these sinks")
    parser.add_argument("--closed-only", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--window-ms", type=int, help=f"window size (default {defaults.WINDOW_MS})")
    parser.add_argument("--lateness-ms", type=int, help=f"allowed lateness (default {defaults.ALLOWED_LATENESS_MS})")
    parser.add_argument("--examples", type=int, help="differences listed per sink (default 5)")
    parser.add_argument("--timeout", type=float, help="seconds to read a topic to its end (default 120)")
    parser.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                        help="audit again every few seconds until EXACT or this long has passed (a pipeline "
                        "still draining), then print the last report")  # fmt: skip
    parser.set_defaults(func=run)


def _truth(args: argparse.Namespace) -> TruthSource:
    if args.source_topic is not None or args.input is not None:
        if args.count is not None or args.generator:
            raise InvalidQuery("--count/-c", "only go with --seed (generator truth)")
        if args.input is not None:
            if args.max_line_bytes < 64:
                raise InvalidQuery("--max-line-bytes", f"must be >= 64, got {args.max_line_bytes}")
            if (compressed := compressed_input_reason(Path(args.input))) is not None:
                raise InvalidQuery("--input", compressed)
            return FileSource(
                args.input, args.events_topic, args.dead_letter_topic, args.max_line_bytes, args.container_log
            )
        return TopicSource(args.source_topic, args.dead_letter_topic)
    if args.count is None:
        raise InvalidQuery("--count", "is required with --seed")
    return GeneratorSource(args.seed, args.count, parse_pairs(args.generator, "-c"))


def build_auditor(args: argparse.Namespace) -> Auditor:
    """The auditor for the command line: the config file's settings plus the flags."""
    settings = load_settings(ConsumerSettings, args.config) if args.config else None
    kafka = settings.kafka if settings is not None else KafkaSettings()
    if args.bootstrap_servers:
        kafka = KafkaSettings(bootstrap_servers=args.bootstrap_servers, properties=kafka.properties)
    audit = (
        settings.audit if settings is not None else ConsumerSettings().audit.model_copy(update={"include_store": False})
    )
    store: StoreSettings | None = settings.store if settings is not None else None
    if args.store_sqlite:
        store = StoreSettings(backend="sqlite", path=args.store_sqlite)
    elif args.store_postgres:
        store = StoreSettings(backend="postgres", dsn=args.store_postgres)
    names = Counter(sink.name for sink in audit.sinks)
    sinks = list(audit.sinks)

    def name_for(kind: str) -> str:
        names[kind] += 1
        return kind if names[kind] == 1 else f"{kind}-{names[kind]}"

    sinks += [AuditSinkSettings(name=name_for("kafka"), kind="kafka", topic=t) for t in args.kafka_sink]
    sinks += [AuditSinkSettings(name=name_for("sqlite"), kind="sqlite", path=p) for p in args.sqlite_sink]
    sinks += [AuditSinkSettings(name=name_for("postgres"), kind="postgres", dsn=d) for d in args.postgres_sink]
    update: dict[str, Any] = {"sinks": sinks, "include_store": store is not None}
    for option, field in (
        ("window_ms", "window_ms"), ("lateness_ms", "allowed_lateness_ms"), ("examples", "examples"),
        ("timeout", "read_timeout_s"),
    ):  # fmt: skip
        value = getattr(args, option)
        if value is not None:
            update[field] = value
    if (args.window_ms is not None and args.window_ms < 1) or (args.lateness_ms is not None and args.lateness_ms < 0):
        raise InvalidQuery("--window-ms/--lateness-ms", "window must be >= 1 ms and lateness >= 0 ms")
    return Auditor(kafka, audit.model_copy(update=update), store)


def _replay(args: argparse.Namespace) -> int:
    """``--replay``: an alias of ``onceflow job audit``, found through onceflow-spark's ``onceflow.audit``
    entry point ``replay`` (it checks the arguments and runs the audit)."""
    found = load_group("onceflow.audit", kind=CALLABLE, name="replay")
    if not found:
        raise InvalidQuery("--replay", "needs onceflow-spark installed (it re-runs the jobs' queries on Spark)")
    return int(found[0].target(args.replay, args.participant_config, examples=args.examples or 5, master=args.master))


def run(args: argparse.Namespace) -> int:
    if args.replay:
        return _replay(args)
    source = _truth(args)
    auditor = build_auditor(args)
    if args.wait < 0:
        raise InvalidQuery("--wait", f"must be >= 0 seconds, got {args.wait}")
    deadline = time.monotonic() + args.wait
    report = auditor.run(source, args.sink, closed_only=args.closed_only)
    while not report.exact and time.monotonic() < deadline:
        print(f"onceflow audit: not exact yet; again in {WAIT_STEP_S:.0f}s", file=sys.stderr, flush=True)
        time.sleep(WAIT_STEP_S)
        report = auditor.run(source, args.sink, closed_only=args.closed_only)
    sys.stdout.write(render(report))
    sys.stdout.flush()
    return 0 if report.exact else 1
