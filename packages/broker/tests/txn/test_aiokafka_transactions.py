"""The core transaction checks with a second client, aiokafka: commit visible, abort invisible,
fencing of a zombie, and offsets committed in a transaction."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import InvalidProducerEpoch, ProducerFenced

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.testing.broker.clients import create_topic, produce_acked


async def _producer(bootstrap: str, transactional_id: str) -> AIOKafkaProducer:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id, enable_idempotence=True)
    await producer.start()
    return producer


async def _read_committed(bootstrap: str, topic: str, idle: float = 1.0) -> list[bytes]:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    values: list[bytes] = []
    try:
        last = time.monotonic()
        while time.monotonic() - last < idle:
            batch = await consumer.getmany(timeout_ms=200)
            for records in batch.values():
                values += [r.value for r in records if r.value is not None]
                last = time.monotonic()
    finally:
        await consumer.stop()
    return values


def _run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), timeout=120))


def test_commit_is_visible_and_abort_is_not(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "aio-rc", partitions=3)

    async def scenario() -> None:
        producer = await _producer(bootstrap, "aio-writer")
        try:
            async with producer.transaction():
                for i in range(6):
                    await producer.send("aio-rc", f"c{i}".encode(), partition=i % 3)
            await producer.begin_transaction()
            for i in range(6):
                await producer.send("aio-rc", f"a{i}".encode(), partition=i % 3)
            await producer.flush()
            await producer.abort_transaction()
        finally:
            await producer.stop()
        assert sorted(await _read_committed(bootstrap, "aio-rc")) == [f"c{i}".encode() for i in range(6)]

    _run(scenario)


def test_second_instance_fences_the_first(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "aio-fence", partitions=1)

    async def scenario() -> None:
        zombie = await _producer(bootstrap, "aio-fenced")
        await zombie.begin_transaction()
        await (await zombie.send("aio-fence", b"zombie"))
        successor = await _producer(bootstrap, "aio-fenced")
        try:
            async with successor.transaction():
                await successor.send("aio-fence", b"successor")
            with pytest.raises((ProducerFenced, InvalidProducerEpoch)):
                await (await zombie.send("aio-fence", b"zombie-late"))
                await zombie.commit_transaction()
        finally:
            await successor.stop()
            await zombie.stop()
        assert await _read_committed(bootstrap, "aio-fence") == [b"successor"]

    _run(scenario)


def test_offsets_in_a_transaction_follow_its_outcome(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "aio-in", partitions=1)
    produce_acked(bootstrap, "aio-in", [f"v{i}".encode() for i in range(10)])
    partition = TopicPartition("aio-in", 0)

    async def committed_offset() -> int | None:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id="aio-group", enable_auto_commit=False)
        await consumer.start()
        try:
            offset: int | None = await consumer.committed(partition)
            return offset
        finally:
            await consumer.stop()

    async def scenario() -> None:
        producer = await _producer(bootstrap, "aio-ctp")
        try:
            await producer.begin_transaction()
            await producer.send_offsets_to_transaction({partition: 4}, "aio-group")
            await producer.abort_transaction()
            assert await committed_offset() is None
            async with producer.transaction():
                await producer.send_offsets_to_transaction({partition: 6}, "aio-group")
            assert await committed_offset() == 6
        finally:
            await producer.stop()

    _run(scenario)
