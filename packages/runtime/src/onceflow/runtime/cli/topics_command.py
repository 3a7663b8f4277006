"""``onceflow topics``: create the pipeline's topics, and end a topic's input.

  onceflow topics create [--bootstrap-servers H:P] [--partitions N] [--replication-factor R]
                         [--min-insync-replicas M] [--config KEY=VALUE ...] [TOPIC ...]
      Create the pipeline's topics unless they exist: ip_count_source (N partitions), ip_count_sink and
      ip_count_dlq (1 partition each), or the TOPICs named, with R replicas (default min(3, brokers)) and
      min.insync.replicas M (default 2 from 3 replicas on, else 1). Idempotent: existing topics are left
      as they are and reported. Services also create what they need at start (their internal topics), and the Spark
      job waits for its source topic, so the services can start in any order.

  onceflow topics end-of-input TOPIC [--source NAME]
      End the input of TOPIC: one end-of-input marker per partition (see onceflow.core.end_of_input), once the
      producer that filled it is done. Every event-time window of the jobs reading TOPIC then closes. Connectors
      end their input themselves (end.of.input); this is for topics filled by other producers.

-X KEY=VALUE passes a librdkafka property (security.protocol, sasl.*, ssl.*) to the clients.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from onceflow.core import topics
from onceflow.core.defaults import BOOTSTRAP_SERVERS
from onceflow.core.errors import InvalidConfig
from onceflow.core.kafka import Replication
from onceflow.core.service import add_command
from onceflow.core.settings import parse_pairs
from onceflow.runtime.storage.kafka_log import ensure_topic
from onceflow.runtime.worker.end_of_input import write_end_of_input

#: The pipeline's topics and their partitions (the source topic's come from --partitions).
PIPELINE_TOPICS = (topics.SOURCE_TOPIC, topics.SINK_TOPIC, topics.DEAD_LETTER_TOPIC)


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers, "topics", help="create the pipeline's topics; end a topic's input", description=__doc__
    )
    commands = parser.add_subparsers(dest="topics_command", required=True)
    create = commands.add_parser("create", help="create the pipeline's topics (idempotent)")
    _client_arguments(create)
    create.add_argument("--partitions", type=int, default=2, help="partitions of ip_count_source (default 2)")
    create.add_argument("--replication-factor", type=int, default=None, metavar="R",
                        help="replicas of each topic (default: min(3, brokers in the cluster))")  # fmt: skip
    create.add_argument("--min-insync-replicas", type=int, default=None, metavar="M",
                        help="min.insync.replicas (default: 2 from 3 replicas on, else 1)")  # fmt: skip
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="topic config")
    create.add_argument("topics", nargs="*", metavar="TOPIC", help="topics to create (default: the pipeline's)")
    create.set_defaults(func=run_create)
    end = commands.add_parser("end-of-input", help="write an end-of-input marker to every partition of a topic")
    _client_arguments(end)
    end.add_argument("topic")
    end.add_argument("--source", default="onceflow-topics", help="who ended the input (in the marker)")
    end.set_defaults(func=run_end_of_input)


def _client_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-servers", default=BOOTSTRAP_SERVERS, metavar="HOST:PORT")
    parser.add_argument("-X", dest="properties", action="append", default=[], metavar="KEY=VALUE",
                        help="librdkafka property for the clients")  # fmt: skip


def _client_config(args: argparse.Namespace) -> dict[str, Any]:
    return {"bootstrap.servers": args.bootstrap_servers, **parse_pairs(args.properties, "-X")}


def run_create(args: argparse.Namespace) -> int:
    if args.partitions < 1:
        raise InvalidConfig("--partitions", f"must be >= 1, got {args.partitions}")
    config = parse_pairs(args.config, "--config")
    client = _client_config(args)
    replication = Replication(
        args.replication_factor, args.min_insync_replicas, "--replication-factor", "--min-insync-replicas"
    )
    for topic in args.topics or PIPELINE_TOPICS:
        partitions = args.partitions if topic == topics.SOURCE_TOPIC or args.topics else 1
        ensure_topic(client, topic, partitions, config, replication=replication)
        print(f"topic {topic}: ready", flush=True)
    return 0


def run_end_of_input(args: argparse.Namespace) -> int:
    offsets = write_end_of_input(_client_config(args), args.topic, args.source)
    print(f"topic {args.topic}: end of input written; end offsets {offsets}", file=sys.stdout, flush=True)
    return 0
