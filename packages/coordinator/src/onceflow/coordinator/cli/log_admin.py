"""``onceflow txn init-log`` and ``onceflow txn rebuild``: create the decision log, or rebuild a lost one.

Both read the coordinator's own configuration (``--config``, the ``ONCEFLOW_COORDINATOR__*``
environment) for the Kafka cluster, the log topic, its transactional id and replication factor.

- ``init-log`` is the log's first start (as ``kafka-storage.sh format`` is a KRaft broker's): it
  creates the topic if it is missing and writes the genesis record into an empty one. A log that
  already holds its genesis is left alone (exit 0); one that holds records without it is refused.
- ``rebuild`` writes the decisions the participants' commit records prove (see
  :mod:`~onceflow.coordinator.log.rebuild`) into a missing or empty log topic. Every participant
  server named with ``--participant`` must answer. ``--dry-run`` prints the plan only.

Exit codes: 0 done, 1 refused or failed (the message says why), 2 bad arguments or configuration.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any, Final

import grpc

from onceflow.contract import TransactionId
from onceflow.contract.clients import ParticipantClient, RpcFailed
from onceflow.contract.shards import WHOLE_SINK
from onceflow.coordinator.exceptions import TransactionLogError
from onceflow.coordinator.log.kafka import KafkaTransactionLog
from onceflow.coordinator.log.rebuild import RebuildPlan, SinkCommits, SinkEvidence, plan_rebuild
from onceflow.coordinator.settings import CoordinatorSettings
from onceflow.core.errors import InvalidConfig, OnceflowError
from onceflow.core.settings import load_settings

#: Records per append when the rebuilt log is written (far below the log's largest append).
CHUNK: Final = 200


class Refused(Exception):  # noqa: N818 - a refusal of the command, printed and exit 1
    """The command will not do what was asked; the message says why and what to do."""


def add_commands(commands: argparse._SubParsersAction[Any]) -> None:
    """Add ``init-log`` and ``rebuild`` to the ``onceflow txn`` command group."""
    config = argparse.ArgumentParser(add_help=False)
    config.add_argument("--config", metavar="FILE", help="the coordinator's TOML config (Kafka, log topic)")
    config.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="deadline of each call")

    init = commands.add_parser("init-log", parents=[config], help="create the decision log (first start only)")
    init.set_defaults(func=_run(_init_log))

    rebuild = commands.add_parser(
        "rebuild", parents=[config], help="rebuild a lost decision log from the participants' commit records"
    )
    rebuild.add_argument("--participant", action="append", required=True, metavar="HOST:PORT",
                         help="a participant server (repeat for each; every one must answer)")  # fmt: skip
    rebuild.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    rebuild.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    rebuild.add_argument("--epoch", type=int, default=0,
                         help="writer epoch of the rebuilt jobs (default: the time in milliseconds)")  # fmt: skip
    rebuild.set_defaults(func=_run(_rebuild))


def _run(command: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            settings = load_settings(CoordinatorSettings, args.config)
        except (OnceflowError, ValueError) as exc:
            print(f"onceflow txn: {exc}", file=sys.stderr)
            return 2
        if settings.transaction_log.backend != "kafka":
            print("onceflow txn: transaction_log.backend is not kafka: there is no log topic", file=sys.stderr)
            return 2
        try:
            return int(command(args, settings))
        except InvalidConfig as exc:  # e.g. a replication factor the cluster cannot give the new topic
            print(f"onceflow txn: {exc}", file=sys.stderr)
            return 2
        except (Refused, TransactionLogError) as exc:
            print(f"onceflow txn: {exc}", file=sys.stderr)
            return 1

    return run


def _log(settings: CoordinatorSettings, timeout: float) -> KafkaTransactionLog:
    log = settings.transaction_log
    return KafkaTransactionLog(
        settings.kafka,
        topic=log.topic,
        transactional_id=log.transactional_id,
        replication_factor=log.replication_factor,
        timeout=timeout,
        init_if_missing=True,
    )


def _init_log(args: argparse.Namespace, settings: CoordinatorSettings) -> int:
    """Steps: 1. look without fencing anyone; 2. initialise a missing or empty topic."""
    log = _log(settings, args.timeout)
    # Step 1
    contents = log.inspect()
    if contents.initialised:
        print(f"decision log {log.topic} is already initialised ({contents.records} records): nothing to do")
        return 0
    if contents.records or contents.start_offset:
        raise Refused(
            f"decision log topic {log.topic} holds {contents.records} records (start offset {contents.start_offset}) "
            "but no genesis record: this is not a first start. If its decisions are lost, rebuild them "
            "(onceflow txn rebuild) into a new topic"
        )
    # Step 2
    log.open()
    log.close()
    print(f"decision log {log.topic} initialised at {settings.kafka.bootstrap_servers}")
    return 0


def _rebuild(args: argparse.Namespace, settings: CoordinatorSettings) -> int:
    """Steps: 1. the topic must be missing or empty; 2. gather the evidence; 3. plan; 4. write."""
    log = _log(settings, args.timeout)
    # Step 1
    contents = log.inspect()
    if contents.records or contents.start_offset:
        raise Refused(
            f"decision log topic {log.topic} holds {contents.records} records: rebuild writes only into a missing "
            f"or empty topic. If the log is damaged, delete it first (kafka-topics.sh --delete --topic {log.topic})"
        )
    # Step 2
    retain = settings.transaction_log.retain_batches
    evidence = [sink for target in args.participant for sink in gather(target, settings, args.timeout, max(retain, 1))]
    # Step 3
    epoch = args.epoch or int(time.time() * 1000)
    plan = plan_rebuild(evidence, epoch=epoch, retain_batches=retain)
    _print_plan(plan, log.topic, epoch)
    if args.dry_run:
        return 0
    if not args.yes and input(f"Write this into {log.topic}? [y/N] ").strip().lower() not in ("y", "yes"):
        print("not rebuilt")
        return 1
    # Step 4
    replayed = log.open()
    try:
        if replayed:
            raise Refused(f"decision log {log.topic} got {len(replayed)} records while the rebuild ran: not written")
        records = plan.records()
        for start in range(0, len(records), CHUNK):
            log.append(records[start : start + CHUNK])
    finally:
        log.close()
    print(f"decision log {log.topic} rebuilt: start the coordinators, then the Spark jobs (they register anew)")
    return 0


def gather(target: str, settings: CoordinatorSettings, timeout: float, max_batches: int) -> list[SinkEvidence]:
    """Each sink of the participant server at ``target``: its commit records and prepared transactions."""
    with ParticipantClient(target, settings.participant_tls, timeout_s=timeout) as client:
        try:
            prepared = client.list_prepared_transactions()
            try:
                listed = client.list_committed_batches(max_batches=min(max_batches, 10_000))
            except RpcFailed as exc:
                if exc.code() != grpc.StatusCode.UNIMPLEMENTED:
                    raise
                print(
                    f"participant {target}: {exc.details()}: only its prepared transactions are used", file=sys.stderr
                )
                listed = []
        except RpcFailed as exc:
            raise Refused(
                f"participant {target} did not answer ({exc.code().name}: {exc.details()}): every participant must"
            ) from None
    held: dict[str, list[TransactionId]] = {}
    commits: dict[str, dict[str, SinkCommits]] = {}
    for name, txn in prepared:
        held.setdefault(name, []).append(txn)
    for hosted in listed:
        for entry in hosted.jobs:
            batches = frozenset(entry.batches)
            commits.setdefault(hosted.sink, {})[entry.job] = SinkCommits(entry.last_batch, batches, entry.cumulative)
    shards = {hosted.sink: hosted.shard for hosted in listed}
    names = sorted(held.keys() | commits.keys())
    return [
        SinkEvidence(name, target, commits.get(name, {}), tuple(held.get(name, ())), shards.get(name, WHOLE_SINK))
        for name in names
    ]


def _print_plan(plan: RebuildPlan, topic: str, epoch: int) -> None:
    print(f"rebuild of {topic} (writer epoch of every job: {epoch})")
    for job in plan.jobs:
        sinks = ", ".join(f"{ref.name}@{ref.target}" for ref in job.participants)
        print(f"  job {job.job}: last committed batch {job.last_committed_batch}; sinks {sinks}")
    _print_txns("committed", [f"{txn.id}" for txn in plan.committed])
    _print_txns("committing (Commit is re-sent)", [f"{txn.id}" for txn in plan.committing])
    _print_txns(
        "presumed aborted (prepared, committed by no sink)", [f"{txn}@{sink}" for sink, txn in plan.presumed_aborted]
    )


def _print_txns(title: str, names: Sequence[str]) -> None:
    shown = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
    print(f"  {title}: {len(names)}" + (f" ({shown})" if names else ""))
