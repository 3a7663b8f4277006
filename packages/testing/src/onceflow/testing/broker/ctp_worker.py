"""A transactional consume-transform-produce worker (confluent-kafka), run as a child process by
tests that kill it with ``kill -9`` at random points.

    python -m onceflow.testing.broker.ctp_worker --bootstrap HOST:PORT --input IN --output OUT \
        --group GROUP --transactional-id ID

Assumptions: ``IN`` is fully written before the worker starts, with plain (non-transactional)
writes, and ``OUT`` has at least as many partitions. The worker copies every record of ``IN`` to
the same partition of ``OUT``, and exits 0 once its committed position is the end of every input
partition. Each transaction holds one consumed batch and the consumer's positions after it
(``send_offsets_to_transaction``), so the output equals the input exactly once whatever point the
worker dies at. It is the loop of confluent-kafka's ``eos-transactions.py`` example:

1. ``init_transactions``: fences a predecessor with the same transactional id and aborts its open
   transaction (output and offsets), before the consumer reads any committed offset.
2. Join the group with a static ``group.instance.id``, so a restarted worker takes over its dead
   predecessor's membership at once, and read with ``isolation.level=read_committed``.
3. Per batch: begin, produce, send the positions with the group metadata (generation and member
   are checked by the broker), commit.
4. On an abortable error: abort, and rewind to the committed offsets. On a fatal one: exit 3.
"""

from __future__ import annotations

import argparse
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

FATAL_EXIT = 3


def _rewind(consumer: Consumer) -> None:
    """Step 4: go back to the committed offsets (the start of the aborted batch)."""
    for committed in consumer.committed(consumer.assignment(), timeout=30):
        offset = committed.offset if committed.offset >= 0 else 0
        consumer.seek(TopicPartition(committed.topic, committed.partition, offset))


def _done(consumer: Consumer, ends: dict[int, int]) -> bool:
    assignment = consumer.assignment()
    if len(assignment) != len(ends):
        return False
    committed = consumer.committed(assignment, timeout=30)
    return all(tp.offset == ends[tp.partition] for tp in committed)


def _process(producer: Producer, consumer: Consumer, output: str, batch: list[Message]) -> None:
    """Step 3: one batch, one transaction."""
    producer.begin_transaction()
    for message in batch:
        partition = message.partition()
        assert partition is not None  # a consumed record always has one
        producer.produce(output, key=message.key(), value=message.value(), partition=partition)
    positions = consumer.position(consumer.assignment())
    producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
    producer.commit_transaction(60)


def run(args: argparse.Namespace) -> int:
    """Copy input to output exactly once; returns the exit code (see module docs)."""
    # Step 1
    producer = Producer(
        {"bootstrap.servers": args.bootstrap, "transactional.id": args.transactional_id, "linger.ms": 5}
    )
    producer.init_transactions(60)
    # Step 2
    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "group.instance.id": f"{args.group}-worker",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "enable.partition.eof": False,
        }
    )
    partitions = consumer.list_topics(args.input, timeout=30).topics[args.input].partitions
    ends = {p: consumer.get_watermark_offsets(TopicPartition(args.input, p), timeout=30)[1] for p in partitions}
    consumer.subscribe([args.input])
    deadline = time.monotonic() + args.max_seconds
    try:
        while time.monotonic() < deadline:
            batch = [m for m in consumer.consume(args.batch, timeout=0.5) if m.error() is None]
            if not batch:
                if _done(consumer, ends):
                    return 0
                continue
            try:
                _process(producer, consumer, args.output, batch)
            except KafkaException as exc:
                error: KafkaError = exc.args[0]
                if error.fatal() or not error.txn_requires_abort():
                    print(f"ctp_worker: fatal: {error}", file=sys.stderr)
                    return FATAL_EXIT
                # Step 4
                producer.abort_transaction(60)
                _rewind(consumer)
        print("ctp_worker: gave up: input not done in time", file=sys.stderr)
        return 1
    finally:
        consumer.close()


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--transactional-id", required=True)
    parser.add_argument("--batch", type=int, default=500, help="records per transaction (at most)")
    parser.add_argument("--max-seconds", type=float, default=300)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
